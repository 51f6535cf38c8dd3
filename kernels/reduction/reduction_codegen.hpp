#pragma once
// CUDA source for one specialization (ReductionPlan) of a ReductionKernel. The host side of the
// single struct parameter it declares is written by ReductionKernel's launch, field by field in
// the same order:
//
//   per input:  array   -> T* pointer, index strides[kept_ndim + red_ndim] (kept axes first)
//               scalar  -> T value
//   per output: T* pointer, index strides[kept_ndim]
//   index _kiln_n_in, _kiln_n_out, _kiln_n_red, _kiln_kshape[kept_ndim], _kiln_rshape[red_ndim],
//   _kiln_split; void* _kiln_partials, unsigned* _kiln_counters

#include "core/kernel_params.hpp"
#include "core/source_writer.hpp"
#include "core/type_binding.hpp"
#include "reduction_plan.hpp"

#include <string>

namespace kiln::detail {

/// What a ReductionKernel is made of: its parameters and the user's code.
struct ReductionDefinition {
    KernelParams params;
    std::string map_expr, reduce_expr, post_map_expr, identity, preamble;
    std::string reduce_type; // as given: a C++ type, a dtype name, a placeholder, or empty
};

/// The C++ type `_type_reduce` stands for: the reduce type as given (a dtype name becomes its
/// C++ type), or the first output's type.
std::string resolve_reduce_type(const ReductionDefinition& def, const ReductionPlan& plan);

/// Whether the identity names an input parameter (CuPy allows an identity such as `init` for a
/// scalar input `init`). Such an identity is evaluated once per block into shared memory, where
/// every accumulator's init() reads it.
bool identity_names_a_parameter(const ReductionDefinition& def);

GeneratedSource generate_reduction(const ReductionDefinition& def, const ReductionPlan& plan,
                                   const Bindings& bindings);

} // namespace kiln::detail
