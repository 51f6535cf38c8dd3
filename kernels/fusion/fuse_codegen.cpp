#include "fuse_codegen.hpp"

#include "core/scalar_overflow.hpp"
#include "kiln/call_arguments.hpp"

#include <vector>

namespace kiln::detail {

namespace {

// Node @p n as a value of @p to: itself, a literal of that type, or a conversion.
std::string as_type(const FuseNode& n, DType to) {
    if (n.kind != FuseNode::Kind::literal && n.dtype == to) return n.name;
    if (n.kind == FuseNode::Kind::literal && (to == DType::float32 || to == DType::float64)) {
        // A weak scalar takes the array's type, as NumPy converts it.
        if (to == DType::float32) {
            float v = 0;
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

// The nodes the outputs need.
std::vector<bool> needed(const FusionTrace& trace) {
    std::vector<bool> need(trace.nodes().size());
    for (int id : trace.outputs())
        need[static_cast<std::size_t>(id)] = true;
    for (std::size_t id = need.size(); id-- > 0;) {
        if (!need[id]) continue;
        const FuseNode& n = trace.node(static_cast<int>(id));
        for (int k = 0; k < n.operand_count; ++k)
            need[static_cast<std::size_t>(n.operands[k])] = true;
    }
    return need;
}

} // namespace

FusedDefinition fused_definition(const FusionTrace& trace, const FuseOptions& options) {
    const auto& outputs = trace.outputs();
    if (outputs.empty()) trace.refuse("the function returns no array (an empty tuple)");
    if (outputs.size() > Outputs::kCapacity)
        trace.refuse("the function returns " + std::to_string(outputs.size()) +
                     " arrays; a kernel gives at most " + std::to_string(Outputs::kCapacity));
    for (std::size_t j = 0; j < outputs.size(); ++j) {
        const FuseNode& n = trace.node(outputs[j]);
        if (!n.array)
            trace.refuse("the function returns " + n.text + " (output " + std::to_string(j) +
                         "), which depends on no array argument: an output must be an array");
    }
    const std::vector<bool> need = needed(trace);
    const int r = trace.reduction();
    FusedDefinition def;
    def.reduction = r >= 0 && need[static_cast<std::size_t>(r)];
    if (def.reduction)
        for (int id : outputs)
            if (!trace.node(id).reduced)
                trace.refuse("the function returns " + trace.node(id).text +
                             ", computed before the reduction " + trace.node(r).text +
                             ", beside values computed after it: every output of a fused "
                             "reduction comes after the reduction");

    const FuseSignature& sig = trace.signature();
    for (int k = 0; k < sig.count; ++k)
        def.in_params += std::string(k ? ", " : "") + kiln::name(sig.operands[k].dtype) + " in" +
                         std::to_string(k);
    for (std::size_t j = 0; j < outputs.size(); ++j)
        def.out_params += std::string(j ? ", " : "") + kiln::name(trace.node(outputs[j]).dtype) +
                          " out" + std::to_string(j);

    // The lines of the work on one side of the reduction (all of it without one).
    auto lines = [&](bool after, const char* separator) {
        std::string text;
        for (std::size_t id = 0; id < need.size(); ++id) {
            const FuseNode& n = trace.node(static_cast<int>(id));
            if (!need[id] || n.kind != FuseNode::Kind::operation || n.reduced != after) continue;
            note_scalar_targets(trace, n, def.scalar_targets);
            text += traced_line(trace, n) + separator;
        }
        return text;
    };
    std::string stores;
    for (std::size_t j = 0; j < outputs.size(); ++j)
        stores += std::string(j ? "; " : "") + "out" + std::to_string(j) + " = " +
                  trace.node(outputs[j]).name;

    // The ready operations' helpers only where an expression calls one: each #include the
    // source needs (complex numbers) costs compile time.
    bool helpers = false;
    for (std::size_t id = 0; id < need.size(); ++id) {
        const FuseNode& n = trace.node(static_cast<int>(id));
        helpers = helpers || (need[id] && n.kind == FuseNode::Kind::operation &&
                              op_expression(n.op, "x", "y", "z").find("kiln_") == 0);
    }
    if (helpers) def.preamble = ops_preamble();
    if (!def.reduction) {
        def.operation = lines(false, "\n            ") + stores;
    } else {
        const FuseNode& red = trace.node(r);
        const ReductionRecipe& recipe = *red.recipe;
        def.map_expr = "[&]() {\n        " + lines(false, "\n        ") +
                       "const auto& x = " + trace.node(red.operands[0]).name + ";  " +
                       kTracedMarker + "the input of " + red.text + "\n        return " +
                       recipe.map + ";\n    }()";
        def.post_map_expr = "const " + std::string(cuda_type(red.dtype)) + ' ' + red.name + " = " +
                            recipe.value + ";  " + kTracedMarker + red.text + "\n    " +
                            lines(true, "\n    ") + stores;
        def.reduce_expr = recipe.reduce;
        def.identity = recipe.identity;
        def.reduce_type = recipe.reduce_type;
        def.empty_is_error = recipe.empty_is_error;
        def.axis = red.axis;
        def.keepdims = red.keepdims;
        def.preamble += recipe.preamble;
    }
    if (!options.preamble.empty()) def.preamble += options.preamble + '\n';
    return def;
}

} // namespace kiln::detail
