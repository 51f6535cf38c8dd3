#pragma once
// A `kiln warm` manifest: the kernels to compile ahead of time, read and checked before anything
// compiles. JSON:
//
//   manifest    = {"kernels": [kernel...]}
//   kernel      = raw | front-end
//   raw         = {"source": CUDA | "file": PATH, "options": [NVRTC option...],
//                  "name_expressions": [C++ name...]}        (options, name_expressions optional)
//   front-end   = {"elementwise": elementwise-spec, "args": [arg...], "size": N, "block_size": N}
//               | {"reduction": reduction-spec, "args": [arg...], "axis": [N...], "keepdims": B}
//   arg         = {"dtype": DTYPE, "scalar": true}
//               | {"dtype": DTYPE, "shape": [N...], "strides": [N...], "offset": N}
//
// A front-end kernel is what ElementwiseKernel::describe_for / ReductionKernel::describe_for give
// (and a cache entry's recipe holds): the spec the kernel was made with and the call that
// specialized it. "strides" are in elements (C order when absent), "offset" is the address
// modulo 16 bytes (0 when absent); "size", "block_size", "axis" (every axis when absent) and
// "keepdims" are optional, as are the spec's fields that have a default:
//
//   elementwise-spec = {"name", "in_params", "out_params", "operation", "preamble", "loop_prep",
//                       "after_loop", "options", "no_return", "reduce_dims"}
//   reduction-spec   = {"name", "in_params", "out_params", "map_expr", "reduce_expr",
//                       "post_map_expr", "identity", "reduce_type", "preamble", "options",
//                       "reduce_dims", "empty_is_error"}
//
// Required: in_params, out_params and the code (operation; map_expr, reduce_expr and
// post_map_expr). The kernel is made from the spec and compiled with compile_for over arrays
// described at a made-up address (nothing is allocated, no GPU is needed), so it gets the key a
// real call with the same arguments asks for, on any GPU of the architecture.

#include "kiln/compiler.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::tools {

/// One kernel of a manifest, ready to compile for any architecture.
struct ManifestKernel {
    /// For messages: "kernel 3 (scale.cu)", "kernel 4 (elementwise 'scale')".
    std::string label;
    /// Compiles the kernel for an architecture ("sm_90") through Compiler::global(). Safe to call
    /// from several threads at once. @throws CompileError.
    std::function<std::shared_ptr<const Program>(const std::string& arch)> compile;
};

/// The kernels of the manifest at @p path (relative "file" paths are taken from its directory).
/// @throws ArgumentError for a manifest that cannot be read, is not JSON or has a kernel that is
/// wrong, naming the kernel and the field at fault ("kernel 2 (elementwise 'scale'): "args"[1]:
/// "dtype" 'flaot32' is not a dtype ..."): an unknown field or front end, a missing or mistyped
/// field, a spec the front end refuses, or arguments its call refuses.
std::vector<ManifestKernel> read_manifest(const std::string& path);

} // namespace kiln::tools
