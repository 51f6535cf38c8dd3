#pragma once
// CUDA source for one specialization (Plan) of an ElementwiseKernel. The host side of the single
// struct parameter it declares is written by ElementwiseKernel's launch, field by field in the
// same order.

#include "elementwise_plan.hpp"
#include "kiln/param_spec.hpp"
#include "type_binding.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::detail {

struct ElementwiseDefinition {
    std::vector<ParamSpec> params; // inputs then outputs
    std::size_t input_count = 0;
    std::string operation, name, preamble, loop_prep, after_loop;
    bool outputs_write_only = false; // every output is only ever assigned, unconditionally
};

std::string generate_elementwise(const ElementwiseDefinition& def, const Plan& plan,
                                 const Bindings& bindings);

/// Whether the kernel needs the toolkit's headers (16-bit float operands: cuda_fp16.h).
bool needs_cuda_headers(const Plan& plan);

} // namespace kiln::detail
