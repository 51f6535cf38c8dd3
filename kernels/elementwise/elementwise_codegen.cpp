#include "elementwise_codegen.hpp"

#include "core/source_writer.hpp"
#include "core/user_code.hpp"

#include <utility>

namespace kiln::detail {

namespace {

constexpr int kTile = 32;    // tiled layout: 32 x 32 elements per tile
constexpr int kTileRows = 8; // threads per tile column (block is 32 x 8)

std::string vec_type(DType d, int vec) {
    return "kiln::Vec<" + std::string(cuda_type(d)) + ", " + std::to_string(vec) + ">";
}

// Emits the kernel body; one instance per generate_elementwise() call.
class ElementwiseEmitter : KernelEmitter<ElementwiseDefinition, Plan> {
  public:
    using KernelEmitter::KernelEmitter;

    GeneratedSource source(const Bindings& bindings) && {
        m_out.head({}, {"kiln/vec.cuh"}, m_index_object || has_raw_operand(), m_plan, bindings,
                   {&m_def.preamble, &m_def.operation, &m_def.loop_prep, &m_def.after_loop});
        if (!m_def.preamble.empty()) m_out.piece("", m_def.preamble, "", "the preamble", {});
        emit_params();
        m_out << "extern \"C\" __global__ void __launch_bounds__(" << block_threads() << ") "
              << m_def.params.name << "(const kiln_params _kiln_p) {\n";
        // CuPy's index object: _ind.size(), _ind.ndim, and _ind.get(), for code that names it.
        if (m_index_object)
            m_out << "    kiln::Indexer<kiln_index_t, " << m_plan.ndim << "> _ind(_kiln_p._kiln_n"
                  << (m_plan.layout == Layout::flat ? "" : ", _kiln_p._kiln_shape") << ");\n";
        m_out << "    const kiln_index_t _kiln_n = _kiln_p._kiln_n;\n";
        for (int k = 0; k < m_plan.count; ++k) {
            const auto& op = m_plan.operands[k];
            const auto& name = param(k).name;
            if (op.kind == OperandKind::scalar)
                m_out << "    " << type(k) << ' ' << name << " = _kiln_p." << name << ";\n";
            else if (op.kind == OperandKind::raw)
                // A value, not a reference, so that decltype(x)::index_t names its index type.
                m_out << "    const " << raw_type(k) << ' ' << name << " = _kiln_p." << name
                      << ";\n";
        }
        // CuPy ends loop_prep and after_loop with a `;` of its own, so code written for it may
        // leave the last statement open (`const double d { ... }`); an extra `;` is empty.
        if (!m_def.loop_prep.empty())
            m_out.piece("    ", m_def.loop_prep, ";", "the loop_prep code", m_def.loop_prep);
        switch (m_plan.layout) {
        case Layout::flat:
            emit_flat();
            break;
        case Layout::strided:
            emit_strided();
            break;
        case Layout::rows:
            emit_rows();
            break;
        case Layout::tiled:
            emit_tiled();
            break;
        }
        if (!m_def.after_loop.empty())
            m_out.piece("    ", m_def.after_loop, ";", "the after_loop code", m_def.after_loop);
        m_out << "}\n";
        return std::move(m_out).finish();
    }

  private:
    bool is_array(int k) const { return m_plan.operands[k].kind == OperandKind::array; }
    int block_threads() const {
        return m_plan.layout == Layout::tiled ? kTile * kTileRows : m_plan.block;
    }
    std::string raw_type(int k) const {
        const auto& op = m_plan.operands[k];
        return "kiln::Raw<" + type(k) + ", kiln_index_t, " + std::to_string(op.raw_ndim) + ", " +
               (op.raw_contiguous ? "true" : "false") + ">";
    }
    bool loads(int k) const { return !is_output(k) || m_plan.load_outputs; }

    void emit_params() {
        const int nd = m_plan.ndim;
        m_out << "struct kiln_params {\n";
        for (int k = 0; k < m_plan.count; ++k) {
            const auto& name = param(k).name;
            switch (m_plan.operands[k].kind) {
            case OperandKind::array:
                m_out << "    " << type(k) << "* _raw_" << name << ";\n";
                if (m_plan.layout != Layout::flat)
                    m_out << "    kiln_index_t _st_" << name << '[' << nd << "];\n";
                break;
            case OperandKind::raw:
                m_out << "    " << raw_type(k) << ' ' << name << ";\n";
                break;
            case OperandKind::scalar:
                m_out << "    " << type(k) << ' ' << name << ";\n";
                break;
            }
        }
        m_out << "    kiln_index_t _kiln_n;\n";
        if (m_plan.layout != Layout::flat) m_out << "    kiln_index_t _kiln_shape[" << nd << "];\n";
        m_out << "};\n";
    }

    // `const T x = <expr>;` for inputs, `T& z = <expr>;` for outputs.
    void bind(int k, const std::string& expr, const char* indent) {
        if (is_output(k))
            m_out << indent << type(k) << "& " << param(k).name << " = " << expr << ";\n";
        else
            m_out << indent << "const " << type(k) << ' ' << param(k).name << " = " << expr
                  << ";\n";
    }

    // The operation for element `i`. An operation that returns (itself or through a macro of the
    // preamble, as CuPy's searchsorted does) runs in a lambda, so that `return` ends only this
    // element, as in CuPy, not the thread's other elements; the lambda inlines away.
    void operation(const char* indent) {
        if (m_index_get) m_out << indent << "_ind.set(i);\n";
        if (!m_returns) {
            m_out.piece(indent, m_def.operation, ";", "the operation", m_def.operation);
            return;
        }
        m_out << indent << "[&]() {\n";
        m_out.piece(std::string(indent) + "    ", m_def.operation, ";", "the operation",
                    m_def.operation);
        m_out << indent << "}();\n";
    }

    bool has_raw_operand() const {
        for (int k = 0; k < m_plan.count; ++k)
            if (m_plan.operands[k].kind == OperandKind::raw) return true;
        return false;
    }

    const bool m_index_get = m_def.operation.find("_ind.get") != std::string::npos;
    // Whether the user's code names the index object, itself or through a preamble macro.
    const bool m_index_object =
        mentions_word(m_def.operation, "_ind") || mentions_word(m_def.loop_prep, "_ind") ||
        mentions_word(m_def.after_loop, "_ind") || macros_use(m_def.preamble, {"_ind"});
    const bool m_returns =
        mentions_word(m_def.operation, "return") || macros_use(m_def.preamble, {"return"});

    // Element k of a per-array vector, or the broadcast scalar, or a direct reference.
    void emit_vector_body(const std::string& first_index, const char* indent) {
        const int vec = m_plan.vec;
        m_out << indent << "#pragma unroll\n";
        m_out << indent << "for (int _kiln_k = 0; _kiln_k < " << vec << "; ++_kiln_k) {\n";
        const std::string inner = std::string(indent) + "    ";
        m_out << inner << "const kiln_index_t i = " << first_index << " + _kiln_k;\n";
        for (int k = 0; k < m_plan.count; ++k) {
            if (!is_array(k)) continue;
            if (m_plan.operands[k].inner_broadcast)
                bind(k, "_s_" + param(k).name, inner.c_str());
            else
                bind(k, "_v_" + param(k).name + ".v[_kiln_k]", inner.c_str());
        }
        operation(inner.c_str());
        m_out << indent << "}\n";
    }

    // Loads of each array operand's vector at element offset `base` (a multiple of vec).
    void emit_vector_loads(const std::string& base, const char* indent) {
        for (int k = 0; k < m_plan.count; ++k) {
            if (!is_array(k) || m_plan.operands[k].inner_broadcast) continue;
            const std::string vt = vec_type(m_plan.operands[k].dtype, m_plan.vec);
            m_out << indent << vt << " _v_" << param(k).name;
            if (loads(k))
                m_out << " = *reinterpret_cast<const " << vt << "*>(" << ptr(k) << " + " << base
                      << ")";
            m_out << ";\n";
        }
    }

    void emit_vector_stores(const std::string& base, const char* indent) {
        for (int k = 0; k < m_plan.count; ++k) {
            if (!is_array(k) || !is_output(k)) continue;
            const std::string vt = vec_type(m_plan.operands[k].dtype, m_plan.vec);
            m_out << indent << "*reinterpret_cast<" << vt << "*>(" << ptr(k) << " + " << base
                  << ") = _v_" << param(k).name << ";\n";
        }
    }

    void emit_flat() {
        const std::string start = "(kiln_index_t)blockIdx.x * blockDim.x + threadIdx.x";
        const std::string step = "(kiln_index_t)gridDim.x * blockDim.x";
        std::string tail_start;
        if (m_plan.vec > 1) {
            const std::string v = std::to_string(m_plan.vec);
            m_out << "    const kiln_index_t _kiln_nv = _kiln_n / " << v << ";\n";
            m_out << "    for (kiln_index_t _kiln_j = " << start
                  << "; _kiln_j < _kiln_nv; _kiln_j += " << step << ") {\n";
            emit_vector_loads("_kiln_j * " + v, "        ");
            emit_vector_body("_kiln_j * " + v, "        ");
            emit_vector_stores("_kiln_j * " + v, "        ");
            m_out << "    }\n";
            tail_start = "_kiln_nv * " + v;
        }
        // The tail (fewer than vec elements) takes one pass, not a grid-stride loop: size_grid()
        // launches at least as many threads as it has elements. A second grid-stride loop costs
        // NVRTC 3% more. Still a `for`, so that an operation's `continue` ends the element.
        if (m_plan.vec > 1)
            m_out << "    for (kiln_index_t i = " << tail_start << " + " << start
                  << "; i < _kiln_n; i = _kiln_n) {\n";
        else
            m_out << "    for (kiln_index_t i = " << start << "; i < _kiln_n; i += " << step
                  << ") {\n";
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k)) bind(k, ptr(k) + "[i]", "        ");
        operation("        ");
        m_out << "    }\n";
    }

    // Offsets of every array operand for the linear index in `index` over dims [0, last].
    void emit_unravel(const std::string& index, int last, const char* indent) {
        m_out << indent << "kiln_index_t _kiln_r = " << index << ";\n";
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k)) m_out << indent << "kiln_index_t _o_" << param(k).name << " = 0;\n";
        for (int d = last; d >= 1; --d) {
            m_out << indent << "{ const kiln_index_t _kiln_c = _kiln_r % _kiln_p._kiln_shape[" << d
                  << "]; _kiln_r /= _kiln_p._kiln_shape[" << d << "];";
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array(k))
                    m_out << " _o_" << param(k).name << " += _kiln_c * " << stride(k, d) << ';';
            m_out << " }\n";
        }
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k))
                m_out << indent << "_o_" << param(k).name << " += _kiln_r * " << stride(k, 0)
                      << ";\n";
    }

    void emit_strided() {
        m_out
            << "    for (kiln_index_t i = (kiln_index_t)blockIdx.x * blockDim.x + threadIdx.x; i < "
               "_kiln_n; i += (kiln_index_t)gridDim.x * blockDim.x) {\n";
        emit_unravel("i", m_plan.ndim - 1, "        ");
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k)) bind(k, ptr(k) + "[_o_" + param(k).name + "]", "        ");
        operation("        ");
        m_out << "    }\n";
    }

    void emit_rows() {
        const int nd = m_plan.ndim;
        const std::string v = std::to_string(m_plan.vec);
        m_out << "    const kiln_index_t _kiln_inner = _kiln_p._kiln_shape[" << nd - 1 << "];\n";
        m_out << "    const kiln_index_t _kiln_rows = _kiln_n / _kiln_inner;\n";
        m_out << "    for (kiln_index_t _kiln_row = blockIdx.y; _kiln_row < _kiln_rows; _kiln_row "
                 "+= gridDim.y) {\n";
        emit_unravel("_kiln_row", nd - 2, "        ");
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k) && m_plan.operands[k].inner_broadcast)
                m_out << "        const " << type(k) << " _s_" << param(k).name << " = " << ptr(k)
                      << "[_o_" << param(k).name << "];\n";
        m_out << "        for (kiln_index_t _kiln_j = (kiln_index_t)blockIdx.x * blockDim.x + "
                 "threadIdx.x; _kiln_j < _kiln_inner / "
              << v << "; _kiln_j += (kiln_index_t)gridDim.x * blockDim.x) {\n";
        if (m_plan.vec > 1) {
            // Inner strides are 1 (or 0, broadcast): element j of the row is at _o_x + j.
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array(k) && !m_plan.operands[k].inner_broadcast) {
                    const std::string vt = vec_type(m_plan.operands[k].dtype, m_plan.vec);
                    m_out << "            " << vt << " _v_" << param(k).name;
                    if (loads(k))
                        m_out << " = *reinterpret_cast<const " << vt << "*>(" << ptr(k) << " + _o_"
                              << param(k).name << " + _kiln_j * " << v << ")";
                    m_out << ";\n";
                }
            emit_vector_body("_kiln_row * _kiln_inner + _kiln_j * " + v, "            ");
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array(k) && is_output(k)) {
                    const std::string vt = vec_type(m_plan.operands[k].dtype, m_plan.vec);
                    m_out << "            *reinterpret_cast<" << vt << "*>(" << ptr(k) << " + _o_"
                          << param(k).name << " + _kiln_j * " << v << ") = _v_" << param(k).name
                          << ";\n";
                }
        } else {
            m_out << "            const kiln_index_t i = _kiln_row * _kiln_inner + _kiln_j;\n";
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array(k))
                    bind(k,
                         m_plan.operands[k].inner_broadcast
                             ? "_s_" + param(k).name
                             : ptr(k) + "[_o_" + param(k).name + " + _kiln_j * " +
                                   stride(k, nd - 1) + "]",
                         "            ");
            operation("            ");
        }
        m_out << "        }\n    }\n";
    }

    // The tile's element (_kiln_r, _kiln_c) for step _kiln_u of a thread's kTile / kTileRows:
    // down the columns (staged operands: consecutive threads on consecutive addresses of an
    // operand contiguous along axis 0) or along the rows.
    void open_tile_step(bool down_columns, const char* indent) {
        m_out << indent << "#pragma unroll\n";
        m_out << indent << "for (int _kiln_u = 0; _kiln_u < " << kTile / kTileRows
              << "; ++_kiln_u) {\n";
        m_out << indent << "    const int _kiln_q = threadIdx.y + _kiln_u * " << kTileRows << ";\n";
        if (down_columns)
            m_out << indent
                  << "    const kiln_index_t _kiln_r = _kiln_r0 + threadIdx.x, _kiln_c = _kiln_c0 "
                     "+ _kiln_q;\n";
        else
            m_out << indent
                  << "    const kiln_index_t _kiln_r = _kiln_r0 + _kiln_q, _kiln_c = _kiln_c0 + "
                     "threadIdx.x;\n";
    }
    std::string tile_address(int k) const {
        return ptr(k) + "[_kiln_r * " + stride(k, 0) + " + _kiln_c * " + stride(k, 1) + "]";
    }
    bool prefetched(int k) const {
        return is_array(k) && !is_output(k) && !m_plan.operands[k].transposed;
    }

    // Every load of a tile is issued before its one barrier: the staged operands' into shared
    // memory and the other inputs' into registers, a thread's kTile / kTileRows steps unrolled.
    // Loads in rolled loops, the other inputs' after the barrier and behind the previous step's
    // stores (which may alias them), left each thread one load in flight at a time: 3.1 TB/s for
    // `x * y + b` with x transposed on an H200, 74% of a copy.
    void emit_tiled() {
        const std::string t = std::to_string(kTile);
        const int steps = kTile / kTileRows;
        bool staged_output = false;
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k) && m_plan.operands[k].transposed) {
                m_out << "    __shared__ " << type(k) << " _t_" << param(k).name << '[' << t << "]["
                      << kTile + 1 << "];\n";
                staged_output = staged_output || is_output(k);
            }
        m_out << "    const kiln_index_t _kiln_R = _kiln_p._kiln_shape[0], _kiln_C = "
                 "_kiln_p._kiln_shape[1];\n";
        m_out << "    const kiln_index_t _kiln_tiles = (_kiln_R + " << kTile - 1 << ") / " << t
              << ";\n";
        m_out << "    for (kiln_index_t _kiln_by = blockIdx.y; _kiln_by < _kiln_tiles; _kiln_by += "
                 "gridDim.y) {\n";
        m_out << "        const kiln_index_t _kiln_r0 = _kiln_by * " << t
              << ", _kiln_c0 = (kiln_index_t)blockIdx.x * " << t << ";\n";
        bool staged_input = false, any_prefetched = false;
        for (int k = 0; k < m_plan.count; ++k) {
            staged_input =
                staged_input || (is_array(k) && m_plan.operands[k].transposed && loads(k));
            if (prefetched(k)) {
                any_prefetched = true;
                m_out << "        " << type(k) << " _d_" << param(k).name << '[' << steps << "];\n";
            }
        }
        if (staged_input) {
            open_tile_step(true, "        ");
            m_out << "            if (_kiln_r < _kiln_R && _kiln_c < _kiln_C) {\n";
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array(k) && m_plan.operands[k].transposed && loads(k))
                    m_out << "                _t_" << param(k).name
                          << "[_kiln_q][threadIdx.x] = " << tile_address(k) << ";\n";
            m_out << "            }\n        }\n";
        }
        if (any_prefetched) {
            open_tile_step(false, "        ");
            m_out << "            if (_kiln_r < _kiln_R && _kiln_c < _kiln_C) {\n";
            for (int k = 0; k < m_plan.count; ++k)
                if (prefetched(k))
                    m_out << "                _d_" << param(k).name
                          << "[_kiln_u] = " << tile_address(k) << ";\n";
            m_out << "            }\n        }\n";
        }
        if (staged_input) m_out << "        __syncthreads();\n";
        open_tile_step(false, "        ");
        m_out << "            if (_kiln_r < _kiln_R && _kiln_c < _kiln_C) {\n";
        m_out << "                const kiln_index_t i = _kiln_r * _kiln_C + _kiln_c;\n";
        for (int k = 0; k < m_plan.count; ++k)
            if (is_array(k))
                bind(k,
                     m_plan.operands[k].transposed
                         ? "_t_" + param(k).name + "[threadIdx.x][_kiln_q]"
                     : prefetched(k) ? "_d_" + param(k).name + "[_kiln_u]"
                                     : tile_address(k),
                     "                ");
        operation("                ");
        m_out << "            }\n        }\n";
        if (staged_output) {
            m_out << "        __syncthreads();\n";
            open_tile_step(true, "        ");
            m_out << "            if (_kiln_r < _kiln_R && _kiln_c < _kiln_C) {\n";
            for (int k = 0; k < m_plan.count; ++k)
                if (is_array(k) && is_output(k) && m_plan.operands[k].transposed)
                    m_out << "                " << tile_address(k) << " = _t_" << param(k).name
                          << "[_kiln_q][threadIdx.x];\n";
            m_out << "            }\n        }\n";
        }
        if (staged_input || staged_output) m_out << "        __syncthreads();\n";
        m_out << "    }\n";
    }
};

} // namespace

GeneratedSource generate_elementwise(const ElementwiseDefinition& def, const Plan& plan,
                                     const Bindings& bindings) {
    return ElementwiseEmitter(def, plan).source(bindings);
}

} // namespace kiln::detail
