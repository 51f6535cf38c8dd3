#pragma once
// The front end's description of one generated kernel as one call specializes it, in JSON: the
// text CompileOptions::description carries into the cache entry's recipe, and a `kiln warm`
// manifest entry as it is, so a kernel can be compiled again without the program that made it.
//
//   {"<front end>": {"name": ..., "in_params": ..., "out_params": ..., <the front end's spec>},
//    "args": [<argument>...], <the front end's call settings>}
//
// The front end is "elementwise" or "reduction"; its spec holds the code and switches the kernel
// was made with (fields at their default are left out). Each argument given, inputs then any
// outputs, is {"dtype": "float32", "scalar": true} or {"dtype": "float32", "shape": [...]} with
// "strides" (in elements) when the array is not C-contiguous and "offset" (its address modulo 16
// bytes, which decides vector loads) when not 0. Call settings: "size" and "block_size" for
// ElementwiseKernel, "axis" (absent: every axis) and "keepdims" for ReductionKernel. Built only
// when a specialization compiles, never on a call that finds its kernel loaded.

#include "kernel_params.hpp"
#include "operands.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::detail {

using Json = nlohmann::ordered_json;

/// Alignment that decides vector loads: 16 bytes, the widest vector.
inline constexpr CUdeviceptr kDescribedAlignment = 16;

/// The start of a spec: {"name", "in_params", "out_params"} as the kernel was given them.
Json describe_params(const KernelParams& params);

/// Sets @p field of @p spec to @p value unless it is empty (the default of every code piece).
void describe_text(Json& spec, const char* field, const std::string& value);

/// Sets "options" of @p spec to the kernel's extra NVRTC options, if any.
void describe_options(Json& spec, const std::vector<std::string>& nvrtc_options);

/// {"<front_end>": spec, "args": [the arguments @p ops were given], then @p call's fields}.
std::string describe_call(const char* front_end, Json spec, const Operands& ops, const Json& call);

} // namespace kiln::detail
