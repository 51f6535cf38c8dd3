#include "fuse_plan.hpp"

#include "kiln/call_arguments.hpp"

#include <algorithm>

namespace kiln::detail {

namespace {

// The nodes a kernel computing @p roots reads (stopping at inputs and reductions, which other
// kernels or the call give it), other than @p own (the kernel's own reduction), in node order.
std::vector<int> read_by(const FusionTrace& trace, const std::vector<int>& roots, int own) {
    std::vector<bool> seen(trace.nodes().size());
    std::vector<int> stack(roots.begin(), roots.end()), read;
    while (!stack.empty()) {
        const int id = stack.back();
        stack.pop_back();
        if (seen[static_cast<std::size_t>(id)]) continue;
        seen[static_cast<std::size_t>(id)] = true;
        const FuseNode& n = trace.node(id);
        if (n.kind == FuseNode::Kind::input || (n.kind == FuseNode::Kind::reduction && id != own)) {
            read.push_back(id);
            continue;
        }
        for (int k = 0; k < n.operand_count; ++k)
            stack.push_back(n.operands[k]);
    }
    std::sort(read.begin(), read.end());
    return read;
}

// The single reduction whose result (with scalars) @p id depends on alone, or -1: no array read
// but through it.
int only_reduction(const FusionTrace& trace, int id) {
    int found = -1;
    for (int r : read_by(trace, {id}, -1)) {
        const FuseNode& n = trace.node(r);
        if (n.kind == FuseNode::Kind::input && !n.array) continue; // a scalar argument
        if (n.kind != FuseNode::Kind::reduction || (found >= 0 && found != r)) return -1;
        found = r;
    }
    return found;
}

} // namespace

std::string step_banner(const FusionTrace& trace, const std::string& name, std::size_t k,
                        std::size_t count, const std::string& what) {
    return "// " + trace.who() + ": kernel " + std::to_string(k + 1) + " of " +
           std::to_string(count) + ", " + name + ": " + what + '\n';
}

FusionPlan plan_fusion(const FusionTrace& trace, const FuseOptions& options) {
    const auto& outputs = trace.outputs();
    const auto& updates = trace.updates();
    if (outputs.empty() && updates.empty())
        trace.refuse("the function returns no array (an empty tuple)");
    if (outputs.size() + updates.size() > Outputs::kCapacity)
        trace.refuse("the function returns " + std::to_string(outputs.size()) +
                     " arrays and updates " + std::to_string(updates.size()) +
                     "; a fused function gives at most " + std::to_string(Outputs::kCapacity));
    for (std::size_t j = 0; j < outputs.size(); ++j) {
        const FuseNode& n = trace.node(outputs[j]);
        if (!n.array)
            trace.refuse("the function returns " + n.text + " (output " + std::to_string(j) +
                         "), which depends on no array argument: an output must be an array");
    }

    // The reductions the outputs and updates need, in trace order.
    std::vector<int> roots(outputs.begin(), outputs.end());
    for (const auto& u : updates)
        roots.push_back(u.second);
    const std::vector<bool> need = trace.needed_by(roots);
    std::vector<int> reductions;
    for (std::size_t id = 0; id < need.size(); ++id)
        if (need[id] && trace.node(static_cast<int>(id)).kind == FuseNode::Kind::reduction)
            reductions.push_back(static_cast<int>(id));

    // A kernel per reduction, with the outputs that need its result alone; then one elementwise
    // kernel with the other outputs and every update.
    FusionPlan plan;
    std::vector<FusionStep> steps(reductions.size());
    for (std::size_t k = 0; k < reductions.size(); ++k) {
        steps[k].reduction = true;
        steps[k].node = reductions[k];
    }
    FusionStep last;
    for (std::size_t j = 0; j < outputs.size(); ++j) {
        // An output that is an updated argument is that argument's array: nothing to compute.
        if (std::any_of(updates.begin(), updates.end(),
                        [&](const auto& u) { return u.second == outputs[j]; }))
            continue;
        const StepTarget target{StepTarget::Kind::output, static_cast<int>(j), outputs[j]};
        const int r = only_reduction(trace, outputs[j]);
        const auto at = std::find(reductions.begin(), reductions.end(), r);
        if (r >= 0 && at != reductions.end())
            steps[static_cast<std::size_t>(at - reductions.begin())].targets.push_back(target);
        else
            last.targets.push_back(target);
    }
    for (const auto& u : updates)
        last.targets.push_back({StepTarget::Kind::update, u.first, u.second});
    if (!last.targets.empty()) steps.push_back(std::move(last));

    // What each kernel reads; a reduction read by a later kernel is also an output of its own.
    for (std::size_t k = 0; k < steps.size(); ++k) {
        FusionStep& step = steps[k];
        std::vector<int> step_roots;
        for (const StepTarget& t : step.targets)
            step_roots.push_back(t.node);
        if (step.reduction) step_roots.push_back(trace.node(step.node).operands[0]);
        step.params = read_by(trace, step_roots, step.reduction ? step.node : -1);
        for (int p : step.params) {
            if (trace.node(p).kind != FuseNode::Kind::reduction) continue;
            FusionStep& source = steps[static_cast<std::size_t>(
                std::find(reductions.begin(), reductions.end(), p) - reductions.begin())];
            const bool written = std::any_of(source.targets.begin(), source.targets.end(),
                                             [&](const StepTarget& t) { return t.node == p; });
            if (!written) source.targets.push_back({StepTarget::Kind::intermediate, -1, p});
        }
    }
    for (const FusionStep& step : steps)
        if (step.targets.size() > Outputs::kCapacity)
            trace.refuse("a kernel of the function would write " +
                         std::to_string(step.targets.size()) + " arrays; a kernel writes at most " +
                         std::to_string(Outputs::kCapacity));

    // One kernel reads every argument, as a call broadcasts them all; several read what they use.
    if (steps.size() == 1) {
        steps[0].params.clear();
        for (int k = 0; k < trace.signature().count; ++k)
            steps[0].params.push_back(k);
    }
    for (std::size_t k = 0; k < steps.size(); ++k) {
        FusionStep& step = steps[k];
        step.name = steps.size() == 1 ? trace.name() : trace.name() + '_' + std::to_string(k + 1);
        const std::string what = step.reduction ? "the reduction " + trace.node(step.node).text
                                                : std::string("elementwise");
        step.def = step_definition(
            trace, step.params, step.reduction ? step.node : -1, step.targets,
            step_banner(trace, step.name, k, steps.size(), what), options, plan.scalar_targets);
    }
    plan.steps = std::move(steps);
    return plan;
}

} // namespace kiln::detail
