#include "fuse_rows.hpp"

#include "elementwise/op_rules.hpp"

#include <algorithm>

namespace kiln::detail {

namespace {

// What a node is in the row kernel: a constant (scalars and literals alone), a value per element
// of a row, or a value per row (a reduction's result and what comes of it with constants).
enum class RowClass : std::uint8_t { constant, element, row };

struct RowNode {
    RowClass cls = RowClass::constant;
    bool flat = false; // per row, from a reduction without keepdims
};

// The support headers the kernel's types need, as the other front ends include them.
std::string headers(const FusionTrace& trace, const std::vector<bool>& need) {
    bool sixteen = false, complex = false;
    for (std::size_t id = 0; id < need.size(); ++id) {
        if (!need[id]) continue;
        const DType d = trace.node(static_cast<int>(id)).dtype;
        sixteen = sixteen || d == DType::float16 || d == DType::bfloat16;
        complex = complex || is_complex(d);
    }
    std::string text = "#include \"kiln/elementwise.cuh\"\n#include \"kiln/reduction.cuh\"\n";
    if (sixteen) text += "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n";
    if (complex) text += "#include \"kiln/complex.cuh\"\n";
    return text + "#include \"kiln/cast.cuh\"\ntypedef long long kiln_index_t;\n";
}

// The reduction of a row's accumulators, given to each of the row's threads: a warp's alone when
// a row has one warp (blockDim.x 32, blockDim.y rows in a block), else the whole block's
// (blockDim.x a multiple of 32, one row in a block).
constexpr const char* kRowReduce = R"(
template <class T> __device__ __forceinline__ T kiln_shfl_first(const T& value) {
    constexpr int kWords = (sizeof(T) + 3) / 4;
    unsigned words[kWords];
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (int k = 0; k < kWords; ++k)
        words[k] = __shfl_sync(0xffffffffu, words[k], 0);
    T result = value;
    memcpy(&result, words, sizeof(T));
    return result;
}
template <class Ops>
__device__ __forceinline__ typename Ops::Acc kiln_row_reduce(typename Ops::Acc acc) {
    typedef typename Ops::Acc Acc;
#pragma unroll
    for (int d = 16; d > 0; d >>= 1) acc = Ops::reduce(acc, kiln::shfl_down(acc, d));
    if (blockDim.x == 32) return kiln_shfl_first(acc);
    __shared__ __align__(16) unsigned char storage[32 * sizeof(Acc)];
    Acc* scratch = reinterpret_cast<Acc*>(storage);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) scratch[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < int(blockDim.x >> 5) ? scratch[lane] : Ops::identity();
#pragma unroll
        for (int d = 16; d > 0; d >>= 1) acc = Ops::reduce(acc, kiln::shfl_down(acc, d));
        if (lane == 0) scratch[0] = acc;
    }
    __syncthreads();
    acc = scratch[0];
    __syncthreads();
    return acc;
}
)";

std::string reduce_type(const std::string& text) {
    try {
        return cuda_type(parse_dtype(text));
    } catch (const Error&) {
        return text;
    }
}

// The reduction node @p r's recipe as a namespace of its own: its typedefs, map, reduce,
// identity and value.
std::string reduction_namespace(const FusionTrace& trace, int r) {
    const FuseNode& red = trace.node(r);
    const ReductionRecipe& recipe = *red.recipe;
    const std::string in = cuda_type(trace.node(red.operands[0]).dtype);
    return "namespace kiln_" + red.name + " {  " + kTracedMarker + red.text + '\n' +
           recipe.preamble + "typedef " + reduce_type(recipe.reduce_type) +
           " _type_reduce;\n"
           "struct Ops {\n"
           "    typedef _type_reduce Acc;\n"
           "    static __device__ __forceinline__ Acc reduce(const Acc& a, const Acc& b) { return "
           "(" +
           recipe.reduce +
           "); }\n"
           "    static __device__ __forceinline__ Acc identity() { return Acc(" +
           recipe.identity +
           "); }\n"
           "};\n"
           "__device__ __forceinline__ _type_reduce map(const " +
           in + "& x, kiln_index_t _J) { return static_cast<_type_reduce>(" + recipe.map +
           "); }\n"
           "struct Size { long long n; __device__ long long size() const { return n; } };\n"
           "__device__ __forceinline__ O value(const _type_reduce& a, long long _cols) {\n"
           "    const Size _in_ind{_cols}, _out_ind{1};\n"
           "    (void)_in_ind; (void)_out_ind;\n"
           "    return " +
           recipe.value + ";\n}\n}\n";
}

bool is_last_axis(const Axes& axis, int ndim) {
    if (axis.is_all()) return ndim == 1;
    return axis.size() == 1 && (axis[0] == -1 || axis[0] == ndim - 1);
}

} // namespace

bool overlaps(const Array& a, const Array& b, bool* identical) {
    auto range = [](const Array& x, CUdeviceptr& lo, CUdeviceptr& hi) {
        std::int64_t low = 0, high = 0;
        for (int d = 0; d < x.ndim(); ++d) {
            if (x.shape()[d] == 0) {
                lo = hi = x.data();
                return;
            }
            const std::int64_t span = (x.shape()[d] - 1) * x.strides()[d];
            (span < 0 ? low : high) += span;
        }
        lo = x.data() + static_cast<CUdeviceptr>(low);
        hi = x.data() + static_cast<CUdeviceptr>(high) + x.itemsize();
    };
    if (identical)
        *identical = a.data() == b.data() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
                     a.strides() == b.strides();
    CUdeviceptr alo = 0, ahi = 0, blo = 0, bhi = 0;
    range(a, alo, ahi);
    range(b, blo, bhi);
    return alo < bhi && blo < ahi;
}

std::optional<RowPlan> plan_rows(const FusionTrace& trace, const FuseOptions& options,
                                 ScalarTargets& scalar_targets) {
    const FuseSignature& sig = trace.signature();
    int ndim = -1;
    for (int k = 0; k < sig.count; ++k) {
        if (sig.operands[k].scalar) continue;
        if (ndim >= 0 && sig.operands[k].ndim != ndim) return std::nullopt;
        ndim = sig.operands[k].ndim;
    }
    if (ndim < 1) return std::nullopt;

    // The targets: outputs (those that are an updated argument are that argument) and updates.
    RowPlan plan;
    plan.ndim = ndim;
    std::vector<int> roots;
    for (std::size_t j = 0; j < trace.outputs().size(); ++j) {
        const int id = trace.outputs()[j];
        if (std::any_of(trace.updates().begin(), trace.updates().end(),
                        [&](const auto& u) { return u.second == id; }))
            continue;
        plan.targets.push_back({{StepTarget::Kind::output, static_cast<int>(j), id}, {}, false});
        roots.push_back(id);
    }
    for (const auto& u : trace.updates()) {
        plan.targets.push_back({{StepTarget::Kind::update, u.first, u.second}, {}, false});
        roots.push_back(u.second);
    }
    if (plan.targets.empty() || plan.targets.size() > Outputs::kCapacity) return std::nullopt;
    const std::vector<bool> need = trace.needed_by(roots);

    // Classify; a shape the row kernel cannot keep is no row plan.
    std::vector<RowNode> rows(trace.nodes().size());
    std::vector<int> reductions;
    for (std::size_t id = 0; id < need.size(); ++id) {
        if (!need[id]) continue;
        const FuseNode& n = trace.node(static_cast<int>(id));
        RowNode& r = rows[id];
        if (n.kind == FuseNode::Kind::input) {
            r.cls = n.array ? RowClass::element : RowClass::constant;
        } else if (n.kind == FuseNode::Kind::reduction) {
            const RowNode& in = rows[static_cast<std::size_t>(n.operands[0])];
            if (in.cls != RowClass::element || trace.node(n.operands[0]).ndim != ndim ||
                !is_last_axis(n.axis, ndim))
                return std::nullopt;
            r.cls = RowClass::row;
            r.flat = !n.keepdims;
            reductions.push_back(static_cast<int>(id));
        } else if (n.kind == FuseNode::Kind::operation) {
            bool element = false, row = false, flat = false, kept = false;
            for (int k = 0; k < n.operand_count; ++k) {
                const RowNode& in = rows[static_cast<std::size_t>(n.operands[k])];
                element = element || in.cls == RowClass::element;
                if (in.cls == RowClass::row) {
                    row = true;
                    (in.flat ? flat : kept) = true;
                }
            }
            // Per-row values without the reduced axis would broadcast against a row's elements
            // (and against kept ones) as NumPy aligns shapes: by their last axes.
            if ((element && flat) || (flat && kept)) return std::nullopt;
            r.cls = element ? RowClass::element : row ? RowClass::row : RowClass::constant;
            r.flat = flat;
        }
    }
    if (reductions.empty()) return std::nullopt;
    for (RowPlan::Target& t : plan.targets) {
        const RowNode& r = rows[static_cast<std::size_t>(t.target.node)];
        t.dtype = trace.node(t.target.node).dtype;
        t.per_row = r.cls == RowClass::row && t.target.kind == StepTarget::Kind::output;
        if (t.per_row && r.flat) plan.keepdims = false;
    }
    for (const RowPlan::Target& t : plan.targets)
        if (t.per_row && rows[static_cast<std::size_t>(t.target.node)].flat != !plan.keepdims)
            return std::nullopt; // per-row outputs of both shapes
    bool updates = !trace.updates().empty();

    // The source.
    plan.name = trace.name();
    std::string src = "// " + trace.who() + ": one kernel, a block per row\n";
    src += headers(trace, need);
    bool helpers = false;
    for (std::size_t id = 0; id < need.size(); ++id)
        helpers = helpers || (need[id] && uses_helpers(trace.node(static_cast<int>(id))));
    if (helpers) src += ops_preamble();
    if (!options.preamble.empty()) src += options.preamble + '\n';
    src += kRowReduce;
    for (int r : reductions)
        src += reduction_namespace(trace, r);

    std::string params;
    for (int k = 0; k < sig.count; ++k) {
        const std::string type = cuda_type(sig.operands[k].dtype);
        const std::string name = "in" + std::to_string(k);
        if (sig.operands[k].scalar) {
            params += "const " + type + ' ' + name + ", ";
        } else {
            params += "const " + type + (updates ? "* " : "* __restrict__ ") + "_p_" + name + ", ";
        }
        plan.args.push_back(k);
    }
    for (std::size_t j = 0; j < plan.targets.size(); ++j)
        params +=
            std::string(cuda_type(plan.targets[j].dtype)) + "* _p_out" + std::to_string(j) + ", ";
    src += "extern \"C\" __global__ void __launch_bounds__(1024) " + plan.name + '(' + params +
           "const long long _rows, const long long _cols, const int _vec) {\n"
           "    const long long _row = (long long)blockIdx.x * blockDim.y + threadIdx.y;\n"
           "    if (_row >= _rows) return;  // a whole warp: rows of one warp share no barrier\n";

    std::vector<bool> available(trace.nodes().size());
    // The lines of the constants, once.
    for (std::size_t id = 0; id < need.size(); ++id) {
        const FuseNode& n = trace.node(static_cast<int>(id));
        if (!need[id] || n.kind != FuseNode::Kind::operation || rows[id].cls != RowClass::constant)
            continue;
        note_scalar_targets(trace, n, scalar_targets);
        src += "    " + traced_line(trace, n) + '\n';
        available[id] = true;
    }
    // A pass over the row computing @p loop_roots per element, then @p body (of `_j`, the
    // element's column) and the @p stores (output, value): with vectors of four elements per
    // array when the call allows (`_vec`), else element by element.
    using Stores = std::vector<std::pair<std::size_t, std::string>>;
    auto pass = [&](const std::vector<int>& loop_roots, const std::string& body,
                    const Stores& stores) {
        const std::vector<int> ids = nodes_for(trace, loop_roots, available);
        std::vector<bool> loads(static_cast<std::size_t>(sig.count));
        auto mark = [&](int id) {
            const FuseNode& n = trace.node(id);
            if (n.kind == FuseNode::Kind::input && n.array)
                loads[static_cast<std::size_t>(n.arg)] = true;
        };
        for (int id : loop_roots)
            mark(id);
        for (int id : ids)
            for (int k = 0; k < trace.node(id).operand_count; ++k)
                mark(trace.node(id).operands[k]);
        std::string lines;
        for (int id : ids) {
            note_scalar_targets(trace, trace.node(id), scalar_targets);
            lines += "        " + traced_line(trace, trace.node(id)) + '\n';
        }
        auto vec = [](const std::string& type) { return "kiln::Vec<" + type + ", 4>"; };
        std::string scalar =
            "#pragma unroll 4\n"
            "    for (long long _j = threadIdx.x; _j < _cols; _j += blockDim.x) {\n";
        std::string vector = "#pragma unroll 2\n"
                             "    for (long long _j0 = (long long)threadIdx.x * 4; _j0 < _cols; "
                             "_j0 += (long long)blockDim.x * 4) {\n";
        std::string element;
        for (int k = 0; k < sig.count; ++k) {
            if (!loads[static_cast<std::size_t>(k)]) continue;
            const std::string type = cuda_type(sig.operands[k].dtype), name = std::to_string(k);
            scalar += "        const " + type + " in" + name + " = _p_in" + name +
                      "[_row * _cols + _j];\n";
            vector += "        const " + vec(type) + " _v_in" + name +
                      " = *reinterpret_cast<const " + vec(type) + "*>(_p_in" + name +
                      " + _row * _cols + _j0);\n";
            element += "        const " + type + " in" + name + " = _v_in" + name + ".v[_e];\n";
        }
        std::string scalar_stores, vector_stores, element_stores;
        for (const auto& [j, value] : stores) {
            const std::string type = cuda_type(plan.targets[j].dtype), out = std::to_string(j);
            scalar_stores += "        _p_out" + out + "[_row * _cols + _j] = " + value + ";\n";
            vector += "        " + vec(type) + " _w_out" + out + ";\n";
            element_stores += "        _w_out" + out + ".v[_e] = " + value + ";\n";
            vector_stores += "        *reinterpret_cast<" + vec(type) + "*>(_p_out" + out +
                             " + _row * _cols + _j0) = _w_out" + out + ";\n";
        }
        scalar += lines + body + scalar_stores + "    }\n";
        vector += "#pragma unroll\n        for (int _e = 0; _e < 4; ++_e) {\n"
                  "        const long long _j = _j0 + _e;\n" +
                  element + lines + body + element_stores + "        }\n" + vector_stores +
                  "    }\n";
        return "    if (_vec) {\n" + vector + "    } else {\n" + scalar + "    }\n";
    };
    for (int r : reductions) {
        const FuseNode& red = trace.node(r);
        const std::string ns = "kiln_" + red.name;
        src +=
            "    " + ns + "::_type_reduce _acc_" + red.name + " = " + ns + "::Ops::identity();\n";
        src += pass({red.operands[0]},
                    "        _acc_" + red.name + " = " + ns + "::Ops::reduce(_acc_" + red.name +
                        ", " + ns + "::map(" + trace.node(red.operands[0]).name + ", _j));\n",
                    {});
        src += "    const " + std::string(cuda_type(red.dtype)) + ' ' + red.name + " = " + ns +
               "::value(kiln_row_reduce<" + ns + "::Ops>(_acc_" + red.name + "), _cols);  " +
               kTracedMarker + red.text + '\n';
        available[static_cast<std::size_t>(r)] = true;
        // The per-row values this result completes.
        for (std::size_t id = 0; id < need.size(); ++id) {
            const FuseNode& n = trace.node(static_cast<int>(id));
            if (!need[id] || available[id] || n.kind != FuseNode::Kind::operation ||
                rows[id].cls != RowClass::row)
                continue;
            bool ready = true;
            for (int k = 0; k < n.operand_count; ++k) {
                const auto& in = trace.node(n.operands[k]);
                ready = ready && (available[static_cast<std::size_t>(n.operands[k])] ||
                                  in.kind == FuseNode::Kind::literal ||
                                  (in.kind == FuseNode::Kind::input && !in.array));
            }
            if (!ready) continue;
            note_scalar_targets(trace, n, scalar_targets);
            src += "    " + traced_line(trace, n) + '\n';
            available[id] = true;
        }
    }
    // The last pass writes the elements; thread 0 the per-row values.
    std::vector<int> element_roots;
    Stores stores;
    std::string row_stores;
    for (std::size_t j = 0; j < plan.targets.size(); ++j) {
        const RowPlan::Target& t = plan.targets[j];
        const FuseNode& n = trace.node(t.target.node);
        if (t.per_row) {
            row_stores +=
                "        _p_out" + std::to_string(j) + "[_row] = " + as_type(n, t.dtype) + ";\n";
        } else {
            element_roots.push_back(t.target.node);
            stores.emplace_back(j, as_type(n, t.dtype));
        }
    }
    if (!element_roots.empty()) src += pass(element_roots, "", stores);
    if (!row_stores.empty()) src += "    if (threadIdx.x == 0) {\n" + row_stores + "    }\n";
    src += "}\n";
    plan.source = std::move(src);
    return plan;
}

bool row_call_fits(const RowPlan& plan, const Arg* args, std::size_t count) {
    const Array* shape_of = nullptr;
    for (std::size_t k = 0; k < count; ++k) {
        if (!args[k].is_array()) continue;
        const Array& a = args[k].array();
        if (a.ndim() != plan.ndim || !a.is_c_contiguous()) return false;
        if (shape_of && a.shape() != shape_of->shape()) return false;
        shape_of = &a;
    }
    if (!shape_of) return false;
    const std::int64_t cols = shape_of->shape()[plan.ndim - 1];
    if (cols < 1 || cols > kMaxRowPlanColumns || shape_of->size() == 0) return false;
    for (const RowPlan::Target& t : plan.targets) {
        if (t.target.kind != StepTarget::Kind::update) continue;
        const Array& target = args[static_cast<std::size_t>(t.target.index)].array();
        for (std::size_t k = 0; k < count; ++k) {
            bool identical = false;
            if (args[k].is_array() && static_cast<int>(k) != t.target.index &&
                overlaps(target, args[k].array(), &identical) && !identical)
                return false;
        }
    }
    return true;
}

} // namespace kiln::detail
