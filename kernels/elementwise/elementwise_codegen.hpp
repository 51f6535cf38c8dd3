#pragma once
// CUDA source for one specialization (Plan) of an ElementwiseKernel. The host side of the single
// struct parameter it declares is written by ElementwiseKernel's launch, field by field in the
// same order.

#include "core/kernel_params.hpp"
#include "core/source_writer.hpp"
#include "core/type_binding.hpp"
#include "elementwise_plan.hpp"

#include <string>

namespace kiln::detail {

/// What an ElementwiseKernel is made of: its parameters and the user's code.
struct ElementwiseDefinition {
    KernelParams params;
    std::string operation, preamble, loop_prep, after_loop;
    bool outputs_write_only = false; // every output is only ever assigned, unconditionally
};

GeneratedSource generate_elementwise(const ElementwiseDefinition& def, const Plan& plan,
                                     const Bindings& bindings);

} // namespace kiln::detail
