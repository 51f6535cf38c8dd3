#pragma once
// The row plan of a traced function whose reductions all reduce the last axis of arrays of one
// shape (softmax: `exp(x - max(x, -1)) / sum(...)`; a row's mean and deviations): one generated
// kernel, a block per row. The block makes one pass over its row per reduction, in trace order,
// and a last pass that writes the outputs; a row's bytes come from DRAM on the first pass and
// from L2 on the later ones, so the kernel moves about what a copy moves. Values per row (the
// reductions' results and what is computed from them and scalars) are computed once per block.
// Rows of up to 128 elements take a warp each, eight rows to a block. Each pass reads and writes
// vectors of four elements (kiln::Vec) when the call's rows all start at a vector's alignment
// (`_vec`), element by element otherwise.
//
// A call takes the row plan when its arguments allow it (row_call_fits); the split plan
// (fuse_plan.hpp) otherwise.

#include "fuse_codegen.hpp"
#include "fuse_plan.hpp"
#include "fuse_trace.hpp"
#include "kiln/call_arguments.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln::detail {

struct RowPlan {
    std::string name;
    std::string source;
    int ndim = 0;          ///< every array argument's
    bool keepdims = true;  ///< the per-row values' shape: (..., 1), else (...)
    std::vector<int> args; ///< the arguments the kernel reads, in parameter order
    struct Target {
        StepTarget target;
        DType dtype;
        bool per_row; ///< one value per row (reduced shape), else one per element
    };
    std::vector<Target> targets; ///< the kernel's outputs, in parameter order after the inputs
};

/// The longest row the row plan takes: a block's passes over a longer row would not stay in L2.
inline constexpr std::int64_t kMaxRowPlanColumns = 32768;

/// The row plan of @p trace, or none when its shape does not fit one (a reduction over another
/// axis, arrays of several ranks, a reduction of per-row values...).
std::optional<RowPlan> plan_rows(const FusionTrace& trace, const FuseOptions& options,
                                 ScalarTargets& scalar_targets);

/// Whether a call with @p args takes the row plan: every array argument of the plan's rank,
/// of one shape, C-contiguous, with rows of 1 to kMaxRowPlanColumns elements, and no updated
/// argument partly overlapping another.
bool row_call_fits(const RowPlan& plan, const Arg* args, std::size_t count);

/// Whether arrays @p a and @p b share bytes; @p identical says whether they are the same view
/// (same address, shape, strides and dtype).
bool overlaps(const Array& a, const Array& b, bool* identical = nullptr);

} // namespace kiln::detail
