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
    count_nonzero,
};

/// A reduction as ReductionKernel's pieces. The expressions see the typedefs C (the type
/// computed in), R (accumulated in) and O (the result) and the helpers of `preamble`.
struct ReductionRecipe {
    DType compute, accumulate, result;
    const char* in;       ///< the input parameters ("T x")
    const char* map;      ///< of the input `x` (and `_J`, the index within the reduction)
    const char* reduce;   ///< of `a` and `b`
    const char* value;    ///< the result, of the reduced value `a` (post-map: "y = " value)
    const char* identity; ///< of the reduce type
    std::string reduce_type;
    bool empty_is_error = false;
    std::string preamble; ///< the typedefs and the helpers
};

/// The name NumPy gives @p op ("sum", "argmax").
const char* reduce_op_name(ReduceOp op);

/// The recipe of sum, prod, max, min, argmax, argmin, mean, any, all or count_nonzero over
/// @p input: @p dtype is NumPy's `dtype=` (sum, prod, mean). max, min, argmax and argmin of
/// complex values follow NumPy's order (real parts first; a NaN in either part wins).
/// @throws AxisError for argmax / argmin over several axes (not all).
ReductionRecipe reduction_recipe(ReduceOp op, DType input, std::optional<DType> dtype,
                                 const Axes& axis);

} // namespace kiln::detail
