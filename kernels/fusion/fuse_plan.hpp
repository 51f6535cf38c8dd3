#pragma once
// How a traced function becomes kernels: its graph split into as few kernels as the data
// dependencies allow. Every reduction is a ReductionKernel of its own (its map the elementwise
// work before it, reading the arguments and the results of earlier reductions); the outputs that
// depend on one reduction's result and scalars alone are that kernel's post-map; whatever else
// the function returns, and every in-place update of an argument, is one ElementwiseKernel after
// the reductions. A function without reductions, or with one whose outputs all come after it, is
// one kernel as before.
//
// Where every reduction reduces the last axis of arrays of one shape (softmax, layer norms, a
// row's statistics), a second plan does it all in one generated kernel of a block per row
// (fuse_rows.hpp); a call takes it when its arguments allow (C-contiguous, one shape, rows that
// fit), the split plan otherwise.

#include "fuse_codegen.hpp"
#include "fuse_trace.hpp"

#include <string>
#include <vector>

namespace kiln::detail {

/// Where a kernel's output goes.
struct StepTarget {
    enum class Kind : std::uint8_t {
        output,       ///< the function's output `index`
        intermediate, ///< the result of reduction node `node`, read by later kernels
        update,       ///< array argument `index`, updated in place
    };
    Kind kind = Kind::output;
    int index = -1;
    int node = -1; ///< the node written
};

/// One kernel of the split plan.
struct FusionStep {
    bool reduction = false;
    int node = -1;           ///< the reduction node (reduction steps)
    std::vector<int> params; ///< the nodes it reads: argument inputs and earlier reductions
    std::vector<StepTarget> targets;
    FusedDefinition def;
    std::string name; ///< the kernel's name
};

struct FusionPlan {
    std::vector<FusionStep> steps;
    ScalarTargets scalar_targets{};
};

/// The split plan of @p trace.
/// @throws FusionError for a function whose outputs cannot be computed: none (and no update),
/// one that depends on no array, too many for a kernel.
FusionPlan plan_fusion(const FusionTrace& trace, const FuseOptions& options);

/// The one-line comment each fused kernel's source starts with: which kernel of how many, and
/// what it computes.
std::string step_banner(const FusionTrace& trace, const std::string& name, std::size_t k,
                        std::size_t count, const std::string& what);

} // namespace kiln::detail
