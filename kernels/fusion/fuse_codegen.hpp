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
#include <vector>

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

struct StepTarget;

/// The definition of one kernel of a fused function: it reads @p params (argument inputs and the
/// results of earlier kernels, by their node names), computes @p reduction (a node, or -1 for an
/// elementwise kernel) when there is one, and writes @p targets' nodes to out0, out1... in order
/// (with a reduction, targets come after it). @p banner starts the preamble. Each scalar
/// argument's integer targets are added to @p scalar_targets.
FusedDefinition step_definition(const FusionTrace& trace, const std::vector<int>& params,
                                int reduction, const std::vector<StepTarget>& targets,
                                const std::string& banner, const FuseOptions& options,
                                ScalarTargets& scalar_targets);

/// The operation nodes that computing @p roots takes, in trace order, stopping at @p available
/// nodes (and at inputs, literals and reductions, which are never computed here).
std::vector<int> nodes_for(const FusionTrace& trace, const std::vector<int>& roots,
                           const std::vector<bool>& available);

/// Node @p n as C++ source of type @p to: its name, a literal of that type, or a conversion.
std::string as_type(const FuseNode& n, DType to);

/// The line that computes operation node @p n (`const float t3 = (t1 * in0);  // traced: ...`).
std::string traced_line(const FusionTrace& trace, const FuseNode& n);

/// Adds the integer types operation node @p n converts a scalar argument to; checks that a
/// literal it converts fits (OverflowError).
void note_scalar_targets(const FusionTrace& trace, const FuseNode& n, ScalarTargets& targets);

/// Whether operation node @p n calls one of the ready operations' helpers (ops_preamble()).
bool uses_helpers(const FuseNode& n);

/// The marker that starts the comment of each traced line.
inline constexpr const char* kTracedMarker = "// traced: ";

} // namespace kiln::detail
