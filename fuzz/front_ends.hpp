#pragma once
// The front ends the spec fuzzer drives, each on the fields of a SpecInput (fuzz_input.hpp).
// A new front end is a function here, its file, and a row in spec_harness.cpp's kFrontEnds.

#include "fuzz_input.hpp"

#include <string>

namespace kiln::fuzz {

/// Calls described per kernel: enough to reach the per-call code with several signatures.
inline constexpr int kCallsPerKernel = 3;

/// ElementwiseKernel. Fields: in_params, out_params, operation, name.
void run_elementwise(const SpecInput& input);

/// ReductionKernel. Fields: in_params, out_params, map_expr, reduce_expr, post_map_expr,
/// identity, name.
void run_reduction(const SpecInput& input);

/// Whether @p source, generated for kernel @p name, defines that kernel.
bool defines_kernel(const std::string& source, const std::string& name);

} // namespace kiln::fuzz
