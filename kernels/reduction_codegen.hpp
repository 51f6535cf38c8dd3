#pragma once
// CUDA source for one specialization (ReductionPlan) of a ReductionKernel. The host side of the
// single struct parameter it declares is written by ReductionKernel's launch, field by field in
// the same order:
//
//   per input:  array   -> T* pointer, index strides[kept_ndim + red_ndim] (kept axes first)
//               scalar  -> T value
//   per output: T* pointer, index strides[kept_ndim]
//   index _n_in, _n_out, _n_red, _kshape[kept_ndim], _rshape[red_ndim], _split
//   void* _partials, unsigned* _counters

#include "kiln/param_spec.hpp"
#include "reduction_plan.hpp"
#include "type_binding.hpp"

#include <cstddef>

#include <string>
#include <vector>

namespace kiln::detail {

struct ReductionDefinition {
    std::vector<ParamSpec> params; // inputs then outputs
    std::size_t input_count = 0;
    std::string map_expr, reduce_expr, post_map_expr, identity, name, preamble;
    std::string reduce_type; // as given: a C++ type, a dtype name, a placeholder, or empty
};

/// Where the user's pieces landed in the generated source (1-based, inclusive line ranges), so a
/// compile error can name the piece at fault.
struct ReductionSourceLines {
    struct Piece {
        int first = 0, last = 0;
        const char* what = "";
    };
    std::vector<Piece> pieces;
    /// The piece covering @p line ("the identity", "the reduce expression", ...) or nullptr.
    const char* piece_at(int line) const noexcept;
};

struct GeneratedReduction {
    std::string source;
    ReductionSourceLines lines;
};

/// The C++ type `_type_reduce` stands for: the reduce type as given (a dtype name becomes its
/// C++ type), or the first output's type.
std::string resolve_reduce_type(const ReductionDefinition& def, const ReductionPlan& plan);

GeneratedReduction generate_reduction(const ReductionDefinition& def, const ReductionPlan& plan,
                                      const Bindings& bindings);

} // namespace kiln::detail
