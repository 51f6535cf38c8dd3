#include "fuse_trace.hpp"

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kiln::detail {

std::string literal_text(const Scalar& s) {
    char buffer[64];
    const DType d = s.dtype();
    // The shortest text that reads back as the same value (in float for float32).
    auto floating = [&](double v, const char* suffix) {
        if (std::isnan(v)) return std::string("kiln::cast<") + cuda_type(d) + ">(0.0 / 0.0)";
        if (std::isinf(v))
            return std::string("kiln::cast<") + cuda_type(d) + ">(" + (v < 0 ? "-" : "") +
                   "1.0 / 0.0)";
        const bool single = *suffix == 'f';
        for (int digits = 1; digits <= 17; ++digits) {
            std::snprintf(buffer, sizeof buffer, "%.*g", digits, v);
            if (single ? std::strtof(buffer, nullptr) == static_cast<float>(v)
                       : std::strtod(buffer, nullptr) == v)
                break;
        }
        std::string text = buffer;
        if (text.find_first_of(".e") == std::string::npos) text += ".0";
        return text + suffix;
    };
    switch (d) {
    case DType::bool_: {
        bool v;
        std::memcpy(&v, s.bytes(), 1);
        return v ? "true" : "false";
    }
    case DType::float32: {
        float v;
        std::memcpy(&v, s.bytes(), 4);
        return floating(v, "f");
    }
    case DType::float64: {
        double v;
        std::memcpy(&v, s.bytes(), 8);
        return floating(v, "");
    }
    default:
        break;
    }
    if (is_integer(d)) {
        if (is_unsigned_integer(d)) {
            std::uint64_t v = 0;
            s.cast_to(DType::uint64, &v);
            return std::to_string(v) + "ull";
        }
        std::int64_t v = 0;
        s.cast_to(DType::int64, &v);
        // The most negative value has no literal of its own.
        if (v == INT64_MIN) return "(-9223372036854775807ll - 1)";
        return std::to_string(v) + "ll";
    }
    if (d == DType::complex64 || d == DType::complex128) {
        std::complex<double> v;
        s.cast_to(DType::complex128, &v);
        const char* suffix = d == DType::complex64 ? "f" : "";
        return std::string(cuda_type(d)) + '(' + floating(v.real(), suffix) + ", " +
               floating(v.imag(), suffix) + ')';
    }
    double v = 0; // 16-bit floats: as double, then converted
    s.cast_to(DType::float64, &v);
    return std::string("kiln::cast<") + cuda_type(d) + ">(" + floating(v, "") + ")";
}

namespace {

ElementwiseOp op_named(const char* name) {
    for (int k = 0; k <= static_cast<int>(ElementwiseOp::convert); ++k)
        if (std::strcmp(op_name(static_cast<ElementwiseOp>(k)), name) == 0)
            return static_cast<ElementwiseOp>(k);
    throw ArgumentError(std::string("kiln::fuse: no operation named '") + name + "'");
}

ReduceOp reduction_named(const char* name) {
    for (int k = 0; k <= static_cast<int>(ReduceOp::count_nonzero); ++k)
        if (std::strcmp(reduce_op_name(static_cast<ReduceOp>(k)), name) == 0)
            return static_cast<ReduceOp>(k);
    throw ArgumentError(std::string("kiln::fuse: no reduction named '") + name + "'");
}

// Binary operations with a C++ operator read as it in traced text: "t2 & t3", "in0 // 2ll".
const char* infix_sign(ElementwiseOp op) {
    return is_binary(op) ? op_sign(op) : nullptr;
}

FusionTrace& trace_of(std::initializer_list<FuseOperand> operands, const char* op) {
    FusionTrace* trace = nullptr;
    for (const FuseOperand& o : operands) {
        if (!o.trace) continue;
        if (trace && o.trace != trace)
            throw FusionError(std::string("kiln::fuse: ") + op +
                              " mixes values of two traced functions");
        trace = o.trace;
    }
    if (!trace)
        throw FusionError(std::string("kiln::fuse: ") + op + " needs a traced value (a Var)");
    return *trace;
}

} // namespace

FusionTrace::FusionTrace(const std::string& fused_name, const FuseSignature& signature)
    : m_name(fused_name)
    , m_signature(signature) {
    for (int k = 0; k < signature.count; ++k) {
        FuseNode node;
        node.kind = FuseNode::Kind::input;
        node.dtype = signature.operands[k].dtype;
        // 1: a weak scalar, 2: a strong one (Scalar::is_weak), 0: an array.
        node.array = signature.operands[k].scalar == 0;
        node.weak = signature.operands[k].scalar == 1;
        node.ndim = signature.operands[k].ndim;
        node.arg = k;
        node.name = node.text = "in" + std::to_string(k);
        m_nodes.push_back(std::move(node));
        m_alias.push_back(signature.operands[k].scalar == 0 ? k : -1);
    }
}

void FusionTrace::refuse(const std::string& what) const {
    throw FusionError(who() + ": " + what);
}

int FusionTrace::operand(const FuseOperand& o) {
    if (o.trace) return o.id;
    FuseNode node;
    node.kind = FuseNode::Kind::literal;
    node.dtype = o.literal.dtype();
    node.weak = o.literal.is_weak();
    node.literal = o.literal;
    node.name = node.text = literal_text(o.literal);
    return add(std::move(node));
}

int FusionTrace::add(FuseNode node) {
    const int id = static_cast<int>(m_nodes.size());
    if (node.kind == FuseNode::Kind::operation || node.kind == FuseNode::Kind::reduction)
        node.name = "t" + std::to_string(id);
    m_nodes.push_back(std::move(node));
    m_alias.push_back(-1);
    return id;
}

void FusionTrace::output(const fusion::Var& v) {
    if (trace_of(v) != this) refuse("returns a value of another traced function");
    m_outputs.push_back(id_of(v));
}

std::vector<bool> FusionTrace::needed_by(const std::vector<int>& roots) const {
    std::vector<bool> need(m_nodes.size());
    for (int id : roots)
        need[static_cast<std::size_t>(id)] = true;
    // Operands come before the nodes that read them: one pass from the last node back.
    for (std::size_t id = need.size(); id-- > 0;) {
        if (!need[id]) continue;
        const FuseNode& n = m_nodes[id];
        for (int k = 0; k < n.operand_count; ++k)
            need[static_cast<std::size_t>(n.operands[k])] = true;
    }
    return need;
}

void FusionTrace::update(int arg, int id) {
    for (auto& u : m_updates)
        if (u.first == arg) {
            u.second = id;
            return;
        }
    m_updates.emplace_back(arg, id);
}

fusion::Var fuse_apply(const char* op_text, std::initializer_list<FuseOperand> operands,
                       DType target) {
    FusionTrace& trace = trace_of(operands, op_text);
    const ElementwiseOp op = op_named(op_text);
    FuseNode node;
    node.kind = FuseNode::Kind::operation;
    node.op = op;
    node.weak = true;
    for (const FuseOperand& o : operands) {
        const int id = trace.operand(o);
        const FuseNode& in = trace.node(id);
        node.operands[node.operand_count++] = id;
        node.weak = node.weak && in.weak;
        node.array = node.array || in.array;
        node.reduced = node.reduced || in.reduced;
        node.ndim = std::max(node.ndim, in.ndim);
    }
    auto at = [&](int k) -> const FuseNode& { return trace.node(node.operands[k]); };
    auto typed = [&](int k) { return TypedOperand{at(k).dtype, at(k).weak}; };
    const std::string what = trace.who() + ": " + op_text;
    if (is_binary(op)) {
        node.types = binary_types(op, typed(0), typed(1), what.c_str());
        for (int k = 0; k < 2; ++k)
            if (at(k).kind == FuseNode::Kind::literal)
                node.types = exact_comparison_types(op, node.types, at(k).literal);
    } else if (is_unary(op))
        node.types = unary_types(op, at(0).dtype, what.c_str());
    else if (op == ElementwiseOp::where)
        node.types = where_types(typed(1), typed(2));
    else if (op == ElementwiseOp::clip) {
        try {
            node.types = clip_types(at(0).dtype);
        } catch (const ArgumentError& e) {
            trace.refuse(e.what());
        }
    } else {
        node.types = convert_types(target);
        node.weak = false; // an explicit dtype is a strong one
    }
    node.dtype = node.types.result;
    if (const char* sign = infix_sign(op))
        node.text = at(0).name + ' ' + sign + ' ' + at(1).name;
    else {
        node.text = std::string(op_text) + '(' + at(0).name;
        for (int k = 1; k < node.operand_count; ++k)
            node.text += ", " + at(k).name;
        if (op == ElementwiseOp::convert) node.text += std::string(", ") + kiln::name(target);
        node.text += ')';
    }
    return trace.var(trace.add(std::move(node)));
}

fusion::Var fuse_reduce(const char* op_text, const fusion::Var& v, const Axes& axis,
                        const ReduceOptions& options) {
    FusionTrace& trace = *FusionTrace::trace_of(v);
    const FuseNode& in = trace.node(FusionTrace::id_of(v));
    if (options.out)
        trace.refuse(std::string(op_text) +
                     " is given an output array: a fused function's outputs are the values it "
                     "returns");
    if (!in.array)
        trace.refuse(std::string(op_text) + " of " + in.text +
                     ", which depends on no array argument");
    const ReduceOp op = reduction_named(op_text);
    FuseNode node;
    node.kind = FuseNode::Kind::reduction;
    node.recipe = reduction_recipe(op, in.dtype, options.dtype, axis, options.ddof);
    node.dtype = node.recipe->result;
    node.array = node.reduced = true;
    node.operands[0] = FusionTrace::id_of(v);
    node.operand_count = 1;
    node.axis = axis;
    node.keepdims = options.keepdims;
    const int reduced_axes = axis.is_all() ? in.ndim : axis.size();
    node.ndim = options.keepdims ? in.ndim : std::max(0, in.ndim - reduced_axes);
    node.text = std::string(op_text) + '(' + in.name;
    if (!axis.is_all()) node.text += ", axis=" + axis.to_string();
    if (options.keepdims) node.text += ", keepdims=true";
    node.text += ')';
    return trace.var(trace.add(std::move(node)));
}

namespace {

// NumPy's order of kinds for same_kind casting: bool, unsigned, signed, floating, complex. A weak
// (Python) integer is of no signedness.
int kind_order(DType d, bool weak) {
    if (is_bool(d)) return 0;
    if (is_integer(d)) return weak || is_unsigned_integer(d) ? 1 : 2;
    if (is_complex(d)) return 4;
    return 3;
}

} // namespace

void fuse_update(fusion::Var& target, const FuseOperand& value, const char* op, bool fresh) {
    FusionTrace& trace = *FusionTrace::trace_of(target);
    if (value.trace && value.trace != &trace)
        trace.refuse(std::string(op) + " mixes values of two traced functions");
    const int to = FusionTrace::id_of(target);
    const DType dtype = trace.node(to).dtype;
    int id = trace.operand(value);
    {
        const FuseNode& v = trace.node(id);
        if (kind_order(v.dtype, v.weak) > kind_order(dtype, false))
            trace.refuse(std::string(op) + ": cannot cast " + v.text + " (" + kiln::name(v.dtype) +
                         ") to " + trace.node(to).text + "'s dtype " + kiln::name(dtype) +
                         " by NumPy's same_kind rule");
        fresh = fresh && v.kind == FuseNode::Kind::operation && trace.alias(id) < 0;
    }
    // The value as the target's dtype, in a node of its own unless made for this update.
    if (trace.node(id).dtype != dtype || !fresh)
        id = FusionTrace::id_of(fuse_apply("astype", {trace.var(id)}, dtype));
    const int arg = trace.alias(to);
    if (arg >= 0) {
        trace.set_alias(id, arg);
        trace.update(arg, id);
    }
    target = trace.var(id);
}

void fuse_refuse(const fusion::Var& v, const char* op, const char* why) {
    FusionTrace::trace_of(v)->refuse(std::string(op) + " cannot be fused: " + why);
}

fusion::Var fusion_input(FusionTrace& trace, std::size_t k) {
    return trace.var(static_cast<int>(k));
}

void fusion_output(FusionTrace& trace, const fusion::Var& v) {
    trace.output(v);
}

void fusion_not_an_array(FusionTrace& trace, const char* returned) {
    trace.refuse(std::string("the function returns ") + returned +
                 ", not an array: return a Var (an expression of the arguments) or a tuple of "
                 "them");
}

void fusion_returns_nothing(FusionTrace& trace) {
    if (trace.updates().empty())
        trace.refuse("the function returns nothing and updates no array argument: return a Var, "
                     "a tuple of them, or update an argument (x += y, kiln::copyto(x, y))");
}

void fusion_wrong_arity(FusionTrace& trace) {
    trace.refuse("the function does not take " + std::to_string(trace.signature().count) +
                 " arguments");
}

} // namespace kiln::detail

namespace kiln::fusion {

DType Var::dtype() const {
    return m_trace->node(m_id).dtype;
}

int Var::ndim() const {
    return m_trace->node(m_id).ndim;
}

Var Var::astype(DType dtype) const {
    return detail::fuse_apply("astype", {*this}, dtype);
}

} // namespace kiln::fusion
