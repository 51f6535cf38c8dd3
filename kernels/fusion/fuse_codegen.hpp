#pragma once
// A traced fused function as a front end's definition: an ElementwiseKernel's (typed parameters
// in0.. and out0.., one operation with a line per traced expression) or, with a reduction, a
// ReductionKernel's (the work before the reduction as its map expression, the reduction's
// recipe, the work after it as its post-map). Each generated line ends in a `// traced: <the
// expression>` comment, so the source, -lineinfo and compile errors say which expression a line
// computes.

#include "fuse_trace.hpp"
#include "kiln/axes.hpp"
#include "kiln/fuse.hpp"

#include <array>
#include <cstdint>
#include <string>

namespace kiln::detail {

/// Per argument of a fused call, a bit (1 << DType) for each integer type the traced code converts
/// it to: a scalar argument is checked against them on each call.
using ScalarTargets = std::array<std::uint16_t, FusedCore::kMaxArgs>;

struct FusedDefinition {
    bool reduction = false;
    std::string in_params, out_params, preamble;
    std::string operation;                            // elementwise
    std::string map_expr, reduce_expr, post_map_expr; // reduction
    std::string identity, reduce_type;                // reduction
    bool empty_is_error = false;                      // reduction
    Axes axis;                                        // reduction
    bool keepdims = false;                            // reduction
    ScalarTargets scalar_targets{};                   // scalar arguments' integer targets
};

/// @throws FusionError for a function whose outputs cannot come from one kernel: none, one
/// that depends on no array, too many, or outputs on both sides of the reduction.
FusedDefinition fused_definition(const FusionTrace& trace, const FuseOptions& options);

/// The marker that starts the comment of each traced line.
inline constexpr const char* kTracedMarker = "// traced: ";

} // namespace kiln::detail
