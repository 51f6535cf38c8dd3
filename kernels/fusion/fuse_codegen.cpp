#include "fuse_codegen.hpp"

#include "core/scalar_overflow.hpp"
#include "fuse_plan.hpp"
#include "kiln/call_arguments.hpp"

#include <complex>
#include <vector>

namespace kiln::detail {

std::string as_type(const FuseNode& n, DType to) {
    if (n.kind != FuseNode::Kind::literal && n.dtype == to) return n.name;
    if (n.kind == FuseNode::Kind::literal &&
        (to == DType::float32 || to == DType::float64 || is_complex(to))) {
        // A weak scalar takes the array's type, as NumPy converts it.
        if (to == DType::float32) {
            float v = 0;
            n.literal.cast_to(to, &v);
            return literal_text(Scalar(v));
        }
        if (to == DType::complex64) {
            std::complex<float> v;
            n.literal.cast_to(to, &v);
            return literal_text(Scalar(v));
        }
        if (to == DType::complex128) {
            std::complex<double> v;
            n.literal.cast_to(to, &v);
            return literal_text(Scalar(v));
        }
        double v = 0;
        n.literal.cast_to(to, &v);
        return literal_text(Scalar(v));
    }
    return "kiln::cast<" + std::string(cuda_type(to)) + ">(" + n.name + ')';
}

// A literal must fit the integer type it is converted to (NumPy 2): checked when traced. A scalar
// argument's value is known only at a call, so its integer targets are collected for the call.
void note_scalar_targets(const FusionTrace& trace, const FuseNode& n, ScalarTargets& targets) {
    for (int k = 0; k < n.operand_count; ++k) {
        const FuseNode& in = trace.node(n.operands[k]);
        const DType to = operand_type(n.op, k, n.types);
        if (!is_integer(to)) continue;
        if (in.kind == FuseNode::Kind::literal)
            check_fits(in.literal, to, trace.who(), "the literal", in.text);
        else if (in.kind == FuseNode::Kind::input && !in.array)
            targets[static_cast<std::size_t>(in.arg)] |=
                static_cast<std::uint16_t>(1U << static_cast<unsigned>(to));
    }
}

std::string traced_line(const FusionTrace& trace, const FuseNode& n) {
    std::string operands[3];
    for (int k = 0; k < n.operand_count; ++k)
        operands[k] = as_type(trace.node(n.operands[k]), operand_type(n.op, k, n.types));
    std::string expr = op_expression(n.op, operands[0], operands[1], operands[2]);
    const std::string type = cuda_type(n.types.result);
    if (n.types.result != n.types.compute) expr = "kiln::cast<" + type + ">(" + expr + ')';
    return "const " + type + ' ' + n.name + " = " + expr + ";  " + kTracedMarker + n.text;
}

bool uses_helpers(const FuseNode& n) {
    return n.kind == FuseNode::Kind::operation && op_uses_helpers(n.op);
}

std::vector<int> nodes_for(const FusionTrace& trace, const std::vector<int>& roots,
                           const std::vector<bool>& available) {
    std::vector<bool> need(trace.nodes().size());
    for (int id : roots)
        need[static_cast<std::size_t>(id)] = true;
    std::vector<int> ids;
    for (std::size_t id = need.size(); id-- > 0;) {
        const FuseNode& n = trace.node(static_cast<int>(id));
        if (!need[id] || n.kind != FuseNode::Kind::operation ||
            (id < available.size() && available[id]))
            continue;
        ids.push_back(static_cast<int>(id));
        for (int k = 0; k < n.operand_count; ++k)
            need[static_cast<std::size_t>(n.operands[k])] = true;
    }
    return {ids.rbegin(), ids.rend()};
}

FusedDefinition step_definition(const FusionTrace& trace, const std::vector<int>& params,
                                int reduction, const std::vector<StepTarget>& targets,
                                const std::string& banner, const FuseOptions& options,
                                ScalarTargets& scalar_targets) {
    FusedDefinition def;
    def.reduction = reduction >= 0;
    std::vector<bool> available(trace.nodes().size());
    for (std::size_t k = 0; k < params.size(); ++k) {
        const FuseNode& p = trace.node(params[k]);
        available[static_cast<std::size_t>(params[k])] = true;
        def.in_params += std::string(k ? ", " : "") + kiln::name(p.dtype) + ' ' + p.name;
    }
    std::string stores;
    std::vector<int> roots;
    for (std::size_t j = 0; j < targets.size(); ++j) {
        const FuseNode& n = trace.node(targets[j].node);
        def.out_params +=
            std::string(j ? ", " : "") + kiln::name(n.dtype) + " out" + std::to_string(j);
        stores += std::string(j ? "; " : "") + "out" + std::to_string(j) + " = " + n.name;
        roots.push_back(targets[j].node);
    }
    bool helpers = false;
    // The lines that compute @p ids.
    auto lines = [&](const std::vector<int>& ids, const char* separator) {
        std::string text;
        for (int id : ids) {
            const FuseNode& n = trace.node(id);
            note_scalar_targets(trace, n, scalar_targets);
            helpers = helpers || uses_helpers(n);
            text += traced_line(trace, n) + separator;
        }
        return text;
    };
    if (!def.reduction) {
        def.operation = lines(nodes_for(trace, roots, available), "\n            ") + stores;
    } else {
        const FuseNode& red = trace.node(reduction);
        const ReductionRecipe& recipe = *red.recipe;
        def.map_expr = "[&]() {\n        " +
                       lines(nodes_for(trace, {red.operands[0]}, available), "\n        ") +
                       "const auto& x = " + trace.node(red.operands[0]).name + ";  " +
                       kTracedMarker + "the input of " + red.text + "\n        return " +
                       recipe.map + ";\n    }()";
        available[static_cast<std::size_t>(reduction)] = true;
        def.post_map_expr = "const " + std::string(cuda_type(red.dtype)) + ' ' + red.name + " = " +
                            recipe.value + ";  " + kTracedMarker + red.text + "\n    " +
                            lines(nodes_for(trace, roots, available), "\n    ") + stores;
        def.reduce_expr = recipe.reduce;
        def.identity = recipe.identity;
        def.reduce_type = recipe.reduce_type;
        def.empty_is_error = recipe.empty_is_error;
        def.axis = red.axis;
        def.keepdims = red.keepdims;
    }
    // The ready operations' helpers only where an expression calls one: each #include the
    // source needs (complex numbers) costs compile time.
    def.preamble = banner;
    if (helpers) def.preamble += ops_preamble();
    if (def.reduction) def.preamble += trace.node(reduction).recipe->preamble;
    if (!options.preamble.empty()) def.preamble += options.preamble + '\n';
    return def;
}

} // namespace kiln::detail
