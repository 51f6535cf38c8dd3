#pragma once
// Generated CUDA source, written the same way by every front end. It starts with the head every
// generated kernel has (Kiln's device headers only where the kernel uses them, since each include
// costs compile time; the index type; a typedef per bound type placeholder); the front end writes
// the rest. The writer
// counts lines and records where each piece of the user's code lands (an operation, a map
// expression, a preamble), so that a compile error on one of their lines names the piece at
// fault (specialization.hpp).

#include "kiln/dtype.hpp"
#include "kiln/param_spec.hpp"
#include "signature.hpp"
#include "type_binding.hpp"

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace kiln::detail {

/// A piece of the user's code in generated source, on lines [first, last] (1-based).
struct SourcePiece {
    int first = 0, last = 0;
    const char* what = ""; ///< "the operation", "the map expression", ...
    std::string quoted;    ///< the code as messages quote it; empty: not quoted (a preamble)
    std::string note;      ///< said after it, e.g. what the identity must convert to
};

struct GeneratedSource {
    std::string source;
    std::vector<SourcePiece> pieces;
    /// The piece covering @p line, or nullptr.
    const SourcePiece* piece_at(int line) const noexcept;
};

/// Whether the user's @p user_code uses what Kiln's device headers give kernel code: names in the
/// namespaces kiln and cupy (kiln::cast, cupy::type_traits, ...), the M_* constants, atomicAdd on
/// signed 64-bit integers.
bool uses_device_support(std::initializer_list<const std::string*> user_code);

class SourceWriter {
  public:
    /// The head. A kernel that needs Kiln's device support gets `kiln/elementwise.cuh`, then
    /// @p kiln_headers (device/kiln/), cuda_fp16.h and cuda_bf16.h when an operand of @p plan is a
    /// 16-bit float or @p user_code names one, kiln/complex.cuh when an operand is complex or
    /// @p user_code mentions complex numbers, kiln/cast.cuh, <cuda/std/bit> when @p user_code uses
    /// a cuda::std bit function. It needs the support when @p generated_needs_support (the front
    /// end's own code uses it: a raw operand, an index object), when an operand is 16-bit or
    /// complex, or when @p user_code uses it (uses_device_support()). Any other kernel gets only
    /// @p lean_headers, the helpers its generated code calls: each header costs NVRTC compile time
    /// in every kernel. Then `kiln_index_t` (int, or long long for plan.index64) and a typedef
    /// per bound placeholder of @p bindings.
    template <class Plan>
    void head(std::initializer_list<const char*> kiln_headers,
              std::initializer_list<const char*> lean_headers, bool generated_needs_support,
              const Plan& plan, const Bindings& bindings,
              std::initializer_list<const std::string*> user_code) {
        DType dtypes[kMaxParams];
        for (int k = 0; k < plan.count; ++k)
            dtypes[k] = plan.operands[k].dtype;
        head(kiln_headers, lean_headers, generated_needs_support, dtypes, plan.count, plan.index64,
             bindings, user_code);
    }

    SourceWriter& operator<<(std::string_view text) {
        m_source += text;
        return *this;
    }
    SourceWriter& operator<<(char c) {
        m_source += c;
        return *this;
    }
    template <class Int,
              class = std::enable_if_t<std::is_integral_v<Int> && !std::is_same_v<Int, char> &&
                                       !std::is_same_v<Int, bool>>>
    SourceWriter& operator<<(Int value) {
        m_source += std::to_string(value);
        return *this;
    }
    /// @p text and a newline.
    void line(std::string_view text) { *this << text << '\n'; }

    /// The user's @p code between @p before and @p after, then a newline, recorded as @p what
    /// ("the operation"); messages quote it as @p quoted (nothing when empty) and add @p note.
    void piece(std::string_view before, const std::string& code, std::string_view after,
               const char* what, std::string quoted, std::string note = {});

    GeneratedSource finish() &&;

  private:
    void head(std::initializer_list<const char*> kiln_headers,
              std::initializer_list<const char*> lean_headers, bool generated_needs_support,
              const DType* dtypes, int count, bool index64, const Bindings& bindings,
              std::initializer_list<const std::string*> user_code);
    int next_line(); // the line the next text starts on

    std::string m_source;
    std::vector<SourcePiece> m_pieces;
    std::size_t m_counted = 0; // characters of m_source whose newlines m_line counts
    int m_line = 1;
};

/// What every front end's emitter starts from: the kernel's @p Definition (its `params` and the
/// user's code), the @p Plan it specializes for (a signature), a SourceWriter, and the names
/// generated source gives operands: each one's parameter and C++ type, and the fields of the
/// struct parameter `_p` that hold its pointer (`_raw_<name>`) and element strides (`_st_<name>`).
template <class Definition, class Plan> class KernelEmitter {
  public:
    KernelEmitter(const Definition& def, const Plan& plan)
        : m_def(def)
        , m_plan(plan) {}

  protected:
    const ParamSpec& param(int k) const { return m_def.params[static_cast<std::size_t>(k)]; }
    bool is_output(int k) const { return m_def.params.is_output(static_cast<std::size_t>(k)); }
    std::string type(int k) const { return cuda_type(m_plan.operands[k].dtype); }
    std::string ptr(int k) const { return "_kiln_p._raw_" + param(k).name; }
    std::string stride(int k, int d) const {
        return "_kiln_p._st_" + param(k).name + '[' + std::to_string(d) + ']';
    }

    const Definition& m_def;
    const Plan& m_plan;
    SourceWriter m_out;
};

} // namespace kiln::detail
