#pragma once
// The ready reductions' recipes, shared by kiln/reductions.hpp (one ReductionKernel per
// reduction) and fusion (kiln/fuse.hpp, a reduction inside a traced function): NumPy's result
// dtypes, the accumulation type, and the map, reduce, identity and result expressions. One
// table, so a reduction means the same fused and unfused.

#include "kiln/axes.hpp"
#include "kiln/dtype.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {
class ReductionKernel;
} // namespace kiln

namespace kiln::detail {

enum class ReduceOp : std::uint8_t {
    sum,
    prod,
    max,
    min,
    argmax,
    argmin,
    mean,
    squared_deviation, // var and std, second pass
    norm,
    any,
    all,
    nansum,  // NaN counted as 0
    nanprod, // NaN counted as 1
    nanmax,  // NaN skipped
    nanmin,
    nanmean,
    var, // one pass: Welford's moments, merged as Chan et al. merge them
    std,
    count_nonzero, // the last
};

/// A reduction as ReductionKernel's pieces. The expressions see the typedefs C (the type
/// computed in), R (accumulated in) and O (the result) and the helpers of `preamble`.
struct ReductionRecipe {
    DType compute, accumulate, result;
    const char* in;       ///< the input parameters ("T x")
    const char* map;      ///< of the input `x` (and `_J`, the index within the reduction)
    const char* reduce;   ///< of `a` and `b`
    std::string value;    ///< the result, of the reduced value `a` (post-map: "y = " value)
    const char* identity; ///< of the reduce type
    std::string reduce_type;
    bool empty_is_error = false;
    std::string preamble; ///< the typedefs and the helpers
};

/// The name NumPy gives @p op ("sum", "argmax").
const char* reduce_op_name(ReduceOp op);

/// The recipe of a single-pass reduction (every ReduceOp but squared_deviation and norm) over
/// @p input: @p dtype is NumPy's `dtype=` (sum, prod, mean and their nan forms, var, std), @p ddof
/// var's and std's. max, min, argmax and argmin of complex values follow NumPy's order (real
/// parts first; a NaN in either part wins).
/// @throws AxisError for argmax / argmin over several axes (not all); DTypeError for nanmax and
/// nanmin of complex values.
ReductionRecipe reduction_recipe(ReduceOp op, DType input, std::optional<DType> dtype,
                                 const Axes& axis, int ddof = 0);

/// The ReductionKernel that computes @p recipe into one output `y`, named @p name (as profilers
/// show it): what the ready reductions build once per recipe.
ReductionKernel recipe_kernel(const ReductionRecipe& recipe, const char* name);

} // namespace kiln::detail
