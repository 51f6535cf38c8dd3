#include "reduction_codegen.hpp"

#include "core/source_writer.hpp"
#include "core/user_code.hpp"
#include "kiln/error.hpp"

#include <utility>

namespace kiln::detail {

namespace {

// Emits the source line by line; the user's expressions are pieces the writer locates.
class ReductionEmitter : KernelEmitter<ReductionDefinition, ReductionPlan> {
  public:
    using KernelEmitter::KernelEmitter;

    GeneratedSource source(const Bindings& bindings) && {
        m_out.head({"kiln/reduction.cuh"}, {"kiln/vec.cuh", "kiln/block_reduce.cuh"},
                   m_map_indices || m_post_map_indices, m_plan, bindings,
                   {&m_def.preamble, &m_def.map_expr, &m_def.reduce_expr, &m_def.post_map_expr,
                    &m_def.identity, &m_def.reduce_type});
        if (!m_def.preamble.empty()) m_out.piece("", m_def.preamble, "", "the preamble", {});
        m_out.piece("typedef ", resolve_reduce_type(m_def, m_plan), " _type_reduce;",
                    "the reduce type", m_def.reduce_type);
        emit_functions();
        emit_params();
        if (m_plan.layout == ReduceLayout::outer)
            emit_outer();
        else
            emit_group();
        return std::move(m_out).finish();
    }

  private:
    int input_count() const { return static_cast<int>(m_def.params.inputs.size()); }
    bool is_array_input(int k) const {
        return !is_output(k) && m_plan.operands[k].kind == OperandKind::array;
    }
    bool is_scalar(int k) const { return m_plan.operands[k].kind == OperandKind::scalar; }
    int kept() const { return m_plan.kept_ndim; }
    int reduced() const { return m_plan.red_ndim; }
    bool has_identity() const { return !m_def.identity.empty(); }
    bool parameter_identity() const { return has_identity() && identity_names_a_parameter(m_def); }
    // Group layout: vectors run along the (contiguous) innermost reduced axis. Outer layout:
    // along the kept innermost axis, one vector per reduction index.
    bool vector_along_reduction() const {
        return m_plan.layout == ReduceLayout::group && m_plan.vec > 1;
    }
    int block_threads() const { return m_plan.block_x * m_plan.block_y; }

    void line(const std::string& s) { m_out.line(s); }

    // The user's expressions as functions: NVRTC then checks each where it is defined, and an
    // error's line says which expression is at fault.
    void emit_functions() {
        m_out.piece("__device__ __forceinline__ _type_reduce kiln_reduce(const _type_reduce& a, "
                    "const _type_reduce& b) { return (",
                    m_def.reduce_expr, "); }", "the reduce expression", m_def.reduce_expr);
        std::string scalars, scalar_names;
        for (int k = 0; k < input_count(); ++k)
            if (is_scalar(k)) {
                scalars += ", const " + type(k) + ' ' + param(k).name;
                scalar_names += ", " + param(k).name;
            }
        m_scalar_args = scalar_names;
        if (parameter_identity()) {
            // Evaluated once per block from the scalars (kiln_seed_identity), then read by every
            // accumulator's init() from shared memory.
            m_out.piece("__device__ __forceinline__ _type_reduce kiln_identity_of(" +
                            (scalars.empty() ? std::string() : scalars.substr(2)) +
                            ") { return _type_reduce(",
                        m_def.identity, "); }", "the identity", m_def.identity,
                        "it must convert to the reduce type " + resolve_reduce_type(m_def, m_plan));
            line("__shared__ __align__(16) unsigned char "
                 "kiln_identity_storage[sizeof(_type_reduce)];");
            line("__device__ __forceinline__ _type_reduce kiln_identity() { return "
                 "*reinterpret_cast<const _type_reduce*>(kiln_identity_storage); }");
        } else if (has_identity()) {
            m_out.piece(
                "__device__ __forceinline__ _type_reduce kiln_identity() { return _type_reduce(",
                m_def.identity, "); }", "the identity", m_def.identity,
                "it must convert to the reduce type " + resolve_reduce_type(m_def, m_plan));
        }
        const std::string indexers = "kiln_index_t _i, const kiln::Indexer<kiln_index_t>& _in_ind, "
                                     "const kiln::Indexer<kiln_index_t>& _out_ind";
        std::string map_params; // the array inputs' elements, then indices, then the scalars
        for (int k = 0; k < input_count(); ++k)
            if (!is_scalar(k)) map_params += ", const " + type(k) + ' ' + param(k).name;
        if (m_map_indices) map_params += ", kiln_index_t _J, kiln_index_t _j, " + indexers;
        map_params += scalars;
        m_out.piece("__device__ __forceinline__ _type_reduce kiln_map(" + without_lead(map_params) +
                        ") { return static_cast<_type_reduce>(",
                    m_def.map_expr, "); }", "the map expression", m_def.map_expr);
        std::string post_map_params = ", const _type_reduce& a";
        for (int k = static_cast<int>(input_count()); k < m_plan.count; ++k)
            post_map_params += ", " + type(k) + "& " + param(k).name;
        if (m_post_map_indices) post_map_params += ", " + indexers;
        post_map_params += scalars;
        m_out.piece("__device__ __forceinline__ void kiln_post_map(" +
                        without_lead(post_map_params) + ") { ",
                    m_def.post_map_expr, "; }", "the post-map expression", m_def.post_map_expr);
        // The accumulator: with an identity, a value; without, a value and whether it holds one.
        line("struct kiln_acc {");
        line("    _type_reduce v;");
        if (has_identity()) {
            line("    __device__ __forceinline__ void init() { v = kiln_identity(); }");
            line("    __device__ __forceinline__ void add(const _type_reduce& x) { v = "
                 "kiln_reduce(v, x); }");
            line("    __device__ __forceinline__ void merge(const kiln_acc& o) { add(o.v); }");
        } else {
            line("    bool has;");
            line("    __device__ __forceinline__ void init() { has = false; }");
            line("    __device__ __forceinline__ void add(const _type_reduce& x) { v = has ? "
                 "kiln_reduce(v, x) : x; has = true; }");
            line("    __device__ __forceinline__ void merge(const kiln_acc& o) { if (o.has) "
                 "add(o.v); }");
        }
        line("};");
        line("static_assert(sizeof(kiln_acc) <= " + std::to_string(m_plan.slot_bytes) +
             ", \"the reduce type is larger than the partial-result slot Kiln reserved\");");
    }

    void emit_params() {
        line("struct kiln_params {");
        for (int k = 0; k < m_plan.count; ++k) {
            const auto& name = param(k).name;
            if (is_output(k)) {
                line("    " + type(k) + "* _raw_" + name + ";");
                line("    kiln_index_t _st_" + name + '[' + std::to_string(kept()) + "];");
            } else if (is_scalar(k)) {
                line("    " + type(k) + ' ' + name + ';');
            } else {
                line("    const " + type(k) + "* _raw_" + name + ";");
                line("    kiln_index_t _st_" + name + '[' + std::to_string(kept() + reduced()) +
                     "];");
            }
        }
        line("    kiln_index_t _kiln_n_in, _kiln_n_out, _kiln_n_red;");
        line("    kiln_index_t _kiln_kshape[" + std::to_string(kept()) + "];");
        line("    kiln_index_t _kiln_rshape[" + std::to_string(reduced()) + "];");
        line("    kiln_index_t _kiln_split;");
        line("    void* _kiln_partials;");
        line("    unsigned* _kiln_counters;");
        line("};");
    }

    void emit_prologue(const std::string& scratch_elements) {
        if (m_map_indices || m_post_map_indices)
            line("    const kiln::Indexer<kiln_index_t> _in_ind{_kiln_p._kiln_n_in}, "
                 "_out_ind{_kiln_p._kiln_n_out};");
        line("    __shared__ __align__(16) unsigned char _kiln_scratch_raw[" + scratch_elements +
             " * sizeof(kiln_acc)];");
        line("    kiln_acc* const _kiln_scratch = reinterpret_cast<kiln_acc*>(_kiln_scratch_raw);");
        if (!m_plan.unsplit) line("    __shared__ bool _kiln_last;");
        for (int k = 0; k < input_count(); ++k)
            if (is_scalar(k))
                line("    const " + type(k) + ' ' + param(k).name + " = _kiln_p." + param(k).name +
                     ';');
        if (parameter_identity()) {
            line("    if (threadIdx.x == 0 && threadIdx.y == 0) "
                 "*reinterpret_cast<_type_reduce*>(kiln_identity_storage) = kiln_identity_of(" +
                 (m_scalar_args.empty() ? std::string() : m_scalar_args.substr(2)) + ");");
            line("    __syncthreads();");
        }
        if (m_plan.unsplit) return; // no partial results: each output is one warp's or block's
        line("    const kiln_index_t _kiln_S = _kiln_p._kiln_split;");
        line("    kiln_acc* const _kiln_partials = "
             "reinterpret_cast<kiln_acc*>(_kiln_p._kiln_partials);");
    }

    // Offsets over the kept axes [0, last] of the index in `index`: _k_<x> for inputs, _o_<y>
    // for outputs.
    void emit_kept_offsets(const std::string& index, int last, const std::string& indent) {
        for (int k = 0; k < m_plan.count; ++k)
            if (is_output(k) || is_array_input(k))
                line(indent + "kiln_index_t " + offset_name(k) + " = 0;");
        if (last < 0) return;
        line(indent + "{");
        line(indent + "    kiln_index_t _kiln_r = " + index + ";");
        for (int d = last; d >= 0; --d) {
            std::string s = indent + "    { const kiln_index_t _kiln_c = ";
            s += d > 0 ? "_kiln_r % _kiln_p._kiln_kshape[" + std::to_string(d) +
                             "]; _kiln_r /= _kiln_p._kiln_kshape[" + std::to_string(d) + "];"
                       : "_kiln_r;";
            for (int k = 0; k < m_plan.count; ++k)
                if (is_output(k) || is_array_input(k))
                    s += ' ' + offset_name(k) + " += _kiln_c * " + stride(k, d) + ';';
            line(s + " }");
        }
        line(indent + "}");
    }
    std::string offset_name(int k) const { return (is_output(k) ? "_o_" : "_k_") + param(k).name; }

    // Declares `_e_<x>`, the offset of element J of the reduction (relative to the kept offset).
    void emit_reduced_offsets(const std::string& j, const std::string& suffix,
                              const std::string& indent) {
        if (reduced() == 1) {
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array_input(k))
                    line(indent + "const kiln_index_t _e_" + param(k).name + suffix + " = " +
                         (vector_along_reduction() ? j : "(" + j + ") * " + stride(k, kept())) +
                         ";");
            return;
        }
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array_input(k))
                line(indent + "kiln_index_t _e_" + param(k).name + suffix + " = 0;");
        line(indent + "{");
        line(indent + "    kiln_index_t _kiln_r = " + j + ";");
        for (int d = reduced() - 1; d >= 0; --d) {
            std::string s = indent + "    { const kiln_index_t _kiln_c = ";
            s += d > 0 ? "_kiln_r % _kiln_p._kiln_rshape[" + std::to_string(d) +
                             "]; _kiln_r /= _kiln_p._kiln_rshape[" + std::to_string(d) + "];"
                       : "_kiln_r;";
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array_input(k))
                    s += " _e_" + param(k).name + suffix + " += _kiln_c * " +
                         stride(k, kept() + d) + ';';
            line(s + " }");
        }
        line(indent + "}");
    }

    // Loads for element J (a vector of plan.vec elements when vec > 1) into _v<suffix>_<x>.
    void emit_loads(const std::string& j, const std::string& suffix, const std::string& indent,
                    const std::string& extra_offset) {
        emit_reduced_offsets(j, suffix, indent);
        for (int k = 0; k < m_plan.count; ++k) {
            if (!is_array_input(k)) continue;
            const std::string address = ptr(k) + " + _k_" + param(k).name + extra_offset +
                                        " + _e_" + param(k).name + suffix;
            if (m_plan.vec > 1) {
                const std::string vt =
                    "kiln::Vec<" + type(k) + ", " + std::to_string(m_plan.vec) + ">";
                line(indent + "const " + vt + " _v" + suffix + '_' + param(k).name +
                     " = *reinterpret_cast<const " + vt + "*>(" + address + ");");
            } else {
                line(indent + "const " + type(k) + " _v" + suffix + '_' + param(k).name + " = *(" +
                     address + ");");
            }
        }
    }

    // acc.add(kiln_map(...)) for element `lane` of the loaded vectors.
    std::string map_call(const std::string& suffix, int lane, const std::string& j,
                         const std::string& i) const {
        std::string args;
        for (int k = 0; k < input_count(); ++k) {
            if (is_scalar(k)) continue;
            args += ", _v" + suffix + '_' + param(k).name;
            if (m_plan.vec > 1) args += ".v[" + std::to_string(lane) + ']';
        }
        // _j: CuPy's linear index of the element over (reduced axes, kept axes), C order.
        if (m_map_indices)
            args += ", " + j + ", (" + j + ") * _kiln_p._kiln_n_out + " + i + ", " + i +
                    ", _in_ind, _out_ind";
        return "kiln_map(" + without_lead(args + m_scalar_args) + ")";
    }

    // A list built as ", a, b": "a, b".
    static std::string without_lead(const std::string& list) {
        return list.size() >= 2 ? list.substr(2) : list;
    }

    // Whether @p expr names one of @p names (an element's indices, the index objects), itself or
    // through a preamble macro. Only then does each call pass them: computed for every element
    // and dropped again by the optimizer, they cost NVRTC 2-4% of a reduction's compile, and the
    // index objects need Kiln's device support headers.
    bool sees(const std::string& expr, std::initializer_list<const char*> names) const {
        for (const char* word : names)
            if (mentions_word(expr, word)) return true;
        return macros_use(m_def.preamble, names);
    }

    // kiln_post_map on @p acc for output @p i; outputs at _o_<y>, or _oc_<y> in a column loop.
    std::string post_map_call(const std::string& acc, const std::string& i,
                              bool column = false) const {
        std::string call = "kiln_post_map(" + acc + ".v";
        for (int k = static_cast<int>(input_count()); k < m_plan.count; ++k)
            call += ", " + ptr(k) + (column ? "[_oc_" : "[_o_") + param(k).name + "]";
        if (m_post_map_indices) call += ", " + i + ", _in_ind, _out_ind";
        return call + m_scalar_args + ");";
    }

    // The unrolled accumulation loop over vector index `jv` from `start` by `step` below `end`.
    // `element(jv, u, lane)` is the reduction index of a loaded element; `extra` an offset added
    // to every load (outer layout: the thread's column). `rolled`: the loops carry `#pragma unroll
    // 1`, for a constant `step`, which LLVM would otherwise unroll beyond the explicit copies (more
    // to compile, the same order of reduce steps; a warp per row of 64 floats: 136 -> 75 ms).
    void emit_accumulate(const std::string& start, const std::string& step, const std::string& end,
                         const std::string& acc, const std::string& i, const std::string& extra,
                         const std::string& indent, bool per_lane_acc, bool rolled = false) {
        const int unroll = m_plan.unroll;
        const int vec = m_plan.vec;
        const std::string v = std::to_string(vec);
        line(indent + "kiln_index_t _kiln_jv = " + start + ";");
        if (!per_lane_acc)
            for (int u = 1; u < unroll; ++u) {
                line(indent + "kiln_acc " + acc + "_u" + std::to_string(u) + ";");
                line(indent + acc + "_u" + std::to_string(u) + ".init();");
            }
        auto body = [&](int copies, const std::string& in) {
            for (int u = 0; u < copies; ++u) {
                const std::string jv = "_kiln_jv + " + std::to_string(u) + " * (" + step + ")";
                const std::string j = vector_along_reduction() ? "(" + jv + ") * " + v : jv;
                emit_loads(j, std::to_string(u), in, extra);
            }
            for (int u = 0; u < copies; ++u) {
                const std::string jv = "_kiln_jv + " + std::to_string(u) + " * (" + step + ")";
                for (int lane = 0; lane < vec; ++lane) {
                    const std::string j = vector_along_reduction()
                                              ? "(" + jv + ") * " + v + " + " + std::to_string(lane)
                                              : jv;
                    const std::string out_i =
                        per_lane_acc ? "(" + i + " + " + std::to_string(lane) + ")" : i;
                    // Group layout: one accumulator per unrolled load, so the chains of
                    // dependent reduce steps run side by side.
                    const std::string target =
                        per_lane_acc ? acc + '[' + std::to_string(lane) + ']'
                                     : (u == 0 ? acc : acc + "_u" + std::to_string(u));
                    line(in + target + ".add(" + map_call(std::to_string(u), lane, j, out_i) +
                         ");");
                }
            }
        };
        if (unroll > 1) {
            if (rolled) line(indent + "#pragma unroll 1");
            line(indent + "for (; _kiln_jv + " + std::to_string(unroll - 1) + " * (" + step +
                 ") < " + end + "; _kiln_jv += " + std::to_string(unroll) + " * (" + step + ")) {");
            body(unroll, indent + "    ");
            line(indent + "}");
        }
        if (rolled) line(indent + "#pragma unroll 1");
        line(indent + "for (; _kiln_jv < " + end + "; _kiln_jv += " + step + ") {");
        body(1, indent + "    ");
        line(indent + "}");
        if (!per_lane_acc)
            for (int u = 1; u < unroll; ++u)
                line(indent + acc + ".merge(" + acc + "_u" + std::to_string(u) + ");");
    }

    // Rows shorter than a warp's loads: row_lanes lanes per output, 32 / row_lanes outputs per
    // warp. The loop runs over whole warps, so every lane reaches each warp reduction.
    void emit_lanes_per_row(int block, const std::string& nv) {
        const int lanes = m_plan.row_lanes;
        int shift = 0;
        while ((1 << shift) < lanes)
            ++shift;
        line("    const int _kiln_lane = threadIdx.x & " + std::to_string(lanes - 1) + ";");
        line("    for (kiln_index_t _kiln_w = ((kiln_index_t)blockIdx.x * " +
             std::to_string(block / 32) + " + (threadIdx.x >> 5)) * " + std::to_string(32 / lanes) +
             "; _kiln_w < _kiln_p._kiln_n_out; _kiln_w += (kiln_index_t)gridDim.x * " +
             std::to_string(block / lanes) + ") {");
        line("        const kiln_index_t _i = _kiln_w + ((threadIdx.x & 31) >> " +
             std::to_string(shift) + ");");
        line("        const bool _kiln_row = _i < _kiln_p._kiln_n_out;");
        emit_kept_offsets("_i", kept() - 1, "        ");
        line("        kiln_acc _kiln_acc;");
        line("        _kiln_acc.init();");
        line("        if (_kiln_row) {");
        emit_accumulate("_kiln_lane", std::to_string(lanes), nv, "_kiln_acc", "_i", "",
                        "            ", false, true);
        line("        }");
        line("        kiln::warp_reduce<" + std::to_string(lanes) + ">(_kiln_acc);");
        line("        if (_kiln_lane == 0 && _kiln_row) " + post_map_call("_kiln_acc", "_i"));
        line("    }");
        line("}");
    }

    void emit_group() {
        const int block = m_plan.block_x;
        const std::string b = std::to_string(block);
        const std::string v = std::to_string(m_plan.vec);
        line("extern \"C\" __global__ void __launch_bounds__(" + b + ") " + m_def.params.name +
             "(const kiln_params _kiln_p) {");
        emit_prologue("32");
        const std::string nv =
            m_plan.vec > 1 ? "_kiln_p._kiln_n_red / " + v : "_kiln_p._kiln_n_red";
        if (m_plan.warp_group && m_plan.row_lanes < 32) {
            emit_lanes_per_row(block, nv);
            return;
        }
        if (m_plan.warp_group) {
            // A warp per output: short reductions, many outputs.
            line("    const int _kiln_lane = threadIdx.x & 31;");
            line("    for (kiln_index_t _i = (kiln_index_t)blockIdx.x * " +
                 std::to_string(block / 32) +
                 " + (threadIdx.x >> 5); _i < _kiln_p._kiln_n_out; _i += (kiln_index_t)gridDim.x "
                 "* " +
                 std::to_string(block / 32) + ") {");
            emit_kept_offsets("_i", kept() - 1, "        ");
            line("        kiln_acc _kiln_acc;");
            line("        _kiln_acc.init();");
            emit_accumulate("_kiln_lane", "32", nv, "_kiln_acc", "_i", "", "        ", false, true);
            line("        kiln::warp_reduce(_kiln_acc);");
            line("        if (_kiln_lane == 0) " + post_map_call("_kiln_acc", "_i"));
            line("    }");
            line("}");
            return;
        }
        if (m_plan.unsplit) {
            // A block per output, never split: the split kernel's path for _S == 1, with the
            // block's loads and reduce steps in the same order.
            line("    for (kiln_index_t _i = blockIdx.x; _i < _kiln_p._kiln_n_out; _i += "
                 "gridDim.x) {");
            emit_kept_offsets("_i", kept() - 1, "        ");
            line("        kiln_acc _kiln_acc;");
            line("        _kiln_acc.init();");
            emit_accumulate("threadIdx.x", b, nv, "_kiln_acc", "_i", "", "        ", false, true);
            line("        _kiln_acc = kiln::block_reduce<" + b + ">(_kiln_acc, _kiln_scratch);");
            line("        if (threadIdx.x == 0) " + post_map_call("_kiln_acc", "_i"));
            line("    }");
            line("}");
            return;
        }
        // A block per output, or _S blocks per output whose partial results the last of them
        // combines in a fixed order.
        line("    for (kiln_index_t _kiln_g = blockIdx.x; _kiln_g < _kiln_p._kiln_n_out * _kiln_S; "
             "_kiln_g += gridDim.x) {");
        line(
            "        const kiln_index_t _i = _kiln_g / _kiln_S, _kiln_s = _kiln_g - _i * _kiln_S;");
        emit_kept_offsets("_i", kept() - 1, "        ");
        line("        kiln_acc _kiln_acc;");
        line("        _kiln_acc.init();");
        emit_accumulate("_kiln_s * " + b + " + threadIdx.x", "_kiln_S * " + b, nv, "_kiln_acc",
                        "_i", "", "        ", false);
        // The block's result, then (split) the combined partial results pass through one
        // block_reduce and one post-map: a second copy of each doubled what NVRTC compiled.
        line("        for (bool _kiln_combined = false;; _kiln_combined = true) {");
        line("            _kiln_acc = kiln::block_reduce<" + b + ">(_kiln_acc, _kiln_scratch);");
        line("            if (_kiln_S == 1 || _kiln_combined) {");
        line("                if (threadIdx.x == 0) {");
        line("                    " + post_map_call("_kiln_acc", "_i"));
        line("                    if (_kiln_combined) _kiln_p._kiln_counters[_i] = 0u;");
        line("                }");
        line("                break;");
        line("            }");
        line("            if (threadIdx.x == 0) {");
        line("                _kiln_partials[_kiln_g] = _kiln_acc;");
        line("                __threadfence();");
        line("                _kiln_last = atomicAdd(_kiln_p._kiln_counters + _i, 1u) == "
             "(unsigned)(_kiln_S - 1);");
        line("            }");
        line("            __syncthreads();");
        line("            if (!_kiln_last) break;");
        line("            __threadfence();");
        line("            _kiln_acc.init();");
        // At most a wave of partials: unrolling this loop only gave NVRTC more to compile.
        line("            #pragma unroll 1");
        line("            for (kiln_index_t _kiln_t = threadIdx.x; _kiln_t < _kiln_S; _kiln_t += " +
             b + ") _kiln_acc.merge(kiln::load_cg(_kiln_partials + _i * _kiln_S + _kiln_t));");
        line("        }");
        line("        if (_kiln_S != 1) __syncthreads();");
        line("    }");
        line("}");
    }

    void emit_outer() {
        const int bx = m_plan.block_x, by = m_plan.block_y;
        const int vec = m_plan.vec;
        const std::string v = std::to_string(vec);
        const std::string xs = std::to_string(bx), ys = std::to_string(by);
        const int last_kept = kept() - 1;
        line("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(bx * by) + ") " +
             m_def.params.name + "(const kiln_params _kiln_p) {");
        // A single row of threads merges nothing through shared memory.
        emit_prologue(by == 1 ? "1" : std::to_string(bx * by * vec));
        line("    const kiln_index_t _kiln_C = _kiln_p._kiln_kshape[" + std::to_string(last_kept) +
             "];");
        line("    const kiln_index_t _kiln_B = _kiln_p._kiln_n_out / _kiln_C;");
        if (m_plan.unsplit) {
            line("    const kiln_index_t _kiln_j0 = 0, _kiln_j1 = _kiln_p._kiln_n_red;");
        } else {
            line("    const kiln_index_t _kiln_chunk = (_kiln_p._kiln_n_red + _kiln_S - 1) / "
                 "_kiln_S;");
            line("    const kiln_index_t _kiln_j0 = (kiln_index_t)blockIdx.y * _kiln_chunk;");
            line("    const kiln_index_t _kiln_j1 = min(_kiln_p._kiln_n_red, _kiln_j0 + "
                 "_kiln_chunk);");
        }
        line("    const kiln_index_t _kiln_c = ((kiln_index_t)blockIdx.x * " + xs +
             " + threadIdx.x) * " + v + ";");
        line("    const bool _kiln_active = _kiln_c < _kiln_C;");
        line("    for (kiln_index_t _kiln_b = blockIdx.z; _kiln_b < _kiln_B; _kiln_b += gridDim.z) "
             "{");
        emit_kept_offsets("_kiln_b", last_kept - 1, "        ");
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array_input(k))
                line("        _k_" + param(k).name + " += _kiln_c * " + stride(k, last_kept) + ";");
        line("        kiln_acc _kiln_acc[" + v + "];");
        line("        #pragma unroll");
        line("        for (int _kiln_q = 0; _kiln_q < " + v +
             "; ++_kiln_q) _kiln_acc[_kiln_q].init();");
        line("        if (_kiln_active) {");
        emit_accumulate("_kiln_j0 + threadIdx.y", ys, "_kiln_j1", "_kiln_acc",
                        "_kiln_b * _kiln_C + _kiln_c", "", "            ", true, true);
        line("        }");
        if (by > 1 || !m_plan.unsplit)
            line("        const int _kiln_t = threadIdx.y * " + xs + " + threadIdx.x;");
        if (by > 1) {
            // The block's rows meet in shared memory; row 0 merges them in order.
            line("        #pragma unroll");
            line("        for (int _kiln_q = 0; _kiln_q < " + v +
                 "; ++_kiln_q) _kiln_scratch[_kiln_t * " + v + " + _kiln_q] = _kiln_acc[_kiln_q];");
            line("        __syncthreads();");
            line("        if (threadIdx.y == 0) {");
            line("            #pragma unroll 1");
            line("            for (int _kiln_y = 1; _kiln_y < " + ys + "; ++_kiln_y)");
            line("                #pragma unroll");
            line("                for (int _kiln_q = 0; _kiln_q < " + v +
                 "; ++_kiln_q) _kiln_acc[_kiln_q].merge(_kiln_scratch[(_kiln_y * " + xs +
                 " + threadIdx.x) * " + v + " + _kiln_q]);");
            line("        }");
        }
        if (m_plan.unsplit) {
            // Too few rows ever to split: the block's result is the output's.
            emit_column_results("        ");
            if (by > 1) line("        __syncthreads();");
            line("    }");
            line("}");
            return;
        }
        line("        if (_kiln_S == 1) {");
        emit_column_results("            ");
        line("        } else {");
        line("            const kiln_index_t _kiln_slot = (_kiln_b * _kiln_S + blockIdx.y) * "
             "_kiln_C + _kiln_c;");
        line("            if (threadIdx.y == 0 && _kiln_active) {");
        line("                #pragma unroll");
        line("                for (int _kiln_q = 0; _kiln_q < " + v +
             "; ++_kiln_q) if (_kiln_c + _kiln_q < _kiln_C) "
             "_kiln_partials[_kiln_slot + _kiln_q] = _kiln_acc[_kiln_q];");
        line("                __threadfence();");
        line("            }");
        line("            __syncthreads();");
        line("            const kiln_index_t _kiln_counter = _kiln_b * gridDim.x + blockIdx.x;");
        line("            if (_kiln_t == 0) _kiln_last = atomicAdd(_kiln_p._kiln_counters + "
             "_kiln_counter, 1u) == "
             "(unsigned)(_kiln_S - 1);");
        line("            __syncthreads();");
        line("            if (_kiln_last && threadIdx.y == 0 && _kiln_active) {");
        line("                __threadfence();");
        line("                for (int _kiln_q = 0; _kiln_q < " + v + "; ++_kiln_q) {");
        line("                    if (_kiln_c + _kiln_q >= _kiln_C) break;");
        line("                    kiln_acc _kiln_m;");
        line("                    _kiln_m.init();");
        line("                    #pragma unroll 1");
        line("                    for (kiln_index_t _kiln_s = 0; _kiln_s < _kiln_S; ++_kiln_s) "
             "_kiln_m.merge(kiln::load_cg(_kiln_partials + (_kiln_b * _kiln_S + _kiln_s) * _kiln_C "
             "+ _kiln_c + _kiln_q));");
        emit_output_column_offsets("                    ");
        line("                    " +
             post_map_call("_kiln_m", "_kiln_b * _kiln_C + _kiln_c + _kiln_q", true));
        line("                }");
        line("            }");
        line("            if (_kiln_last && _kiln_t == 0) _kiln_p._kiln_counters[_kiln_counter] = "
             "0u;");
        line("        }");
        line("        __syncthreads();");
        line("    }");
        line("}");
    }

    // Row 0 of the block post-maps its columns' results into the outputs.
    void emit_column_results(const std::string& indent) {
        line(indent + "if (threadIdx.y == 0 && _kiln_active) {");
        line(indent + "    #pragma unroll");
        line(indent + "    for (int _kiln_q = 0; _kiln_q < " + std::to_string(m_plan.vec) +
             "; ++_kiln_q) {");
        line(indent + "        if (_kiln_c + _kiln_q >= _kiln_C) break;");
        emit_output_column_offsets(indent + "        ");
        line(indent + "        " +
             post_map_call("_kiln_acc[_kiln_q]", "_kiln_b * _kiln_C + _kiln_c + _kiln_q", true));
        line(indent + "    }");
        line(indent + "}");
    }

    // Output offsets of column _c + _q, shadowing the outer ones within the loop body.
    void emit_output_column_offsets(const std::string& indent) {
        const int last_kept = kept() - 1;
        for (int k = static_cast<int>(input_count()); k < m_plan.count; ++k)
            line(indent + "const kiln_index_t _oc_" + param(k).name + " = _o_" + param(k).name +
                 " + (_kiln_c + _kiln_q) * " + stride(k, last_kept) + ";");
    }

    std::string m_scalar_args;
    /// kiln_map takes the indices, kiln_post_map the output's index and the index objects.
    const bool m_map_indices = sees(m_def.map_expr, {"_J", "_j", "_i", "_in_ind", "_out_ind"});
    const bool m_post_map_indices = sees(m_def.post_map_expr, {"_i", "_in_ind", "_out_ind"});
};

} // namespace

bool identity_names_a_parameter(const ReductionDefinition& def) {
    for (const ParamSpec& param : def.params.inputs)
        if (mentions_word(def.identity, param.name)) return true;
    return false;
}

std::string resolve_reduce_type(const ReductionDefinition& def, const ReductionPlan& plan) {
    if (def.reduce_type.empty()) return cuda_type(plan.operands[def.params.inputs.size()].dtype);
    try {
        return cuda_type(parse_dtype(def.reduce_type));
    } catch (const ArgumentError&) {
        return def.reduce_type; // a C++ type or a placeholder
    }
}

GeneratedSource generate_reduction(const ReductionDefinition& def, const ReductionPlan& plan,
                                   const Bindings& bindings) {
    return ReductionEmitter(def, plan).source(bindings);
}

} // namespace kiln::detail
