#pragma once
// CUDA source for one specialization (Plan) of an ElementwiseKernel, and the host-side layout of
// the single struct parameter that source declares.

#include "elementwise_plan.hpp"
#include "kiln/param_spec.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kiln::detail {

struct ElementwiseDefinition {
    std::vector<ParamSpec> params; // inputs then outputs
    std::size_t input_count = 0;
    std::string operation, name, preamble, loop_prep, after_loop;
    bool outputs_write_only = false; // every output is only ever assigned, unconditionally
};

/// Placeholder letter -> bound dtype, for `using T = float;` lines.
using Bindings = std::array<std::optional<DType>, 128>;

std::string generate_elementwise(const ElementwiseDefinition& def, const Plan& plan,
                                 const Bindings& bindings);

/// Whether the kernel needs the toolkit's headers (16-bit float operands: cuda_fp16.h).
bool needs_cuda_headers(const Plan& plan);

/// Whether @p operation only ever assigns each of @p outputs, unconditionally: statements of the
/// form `out = expression;` at the top level, no control flow, no other mention of the outputs.
/// Then vector stores need not read the outputs first.
bool outputs_are_write_only(const std::string& operation, const std::vector<std::string>& outputs);

/// Appends the kernel's struct parameter field by field with C++'s alignment rules, mirroring
/// the struct generate_elementwise() declares.
class ParamWriter {
  public:
    void pointer(std::uint64_t address) { put(&address, 8, 8); }
    void index(std::int64_t value, bool index64) {
        if (index64) {
            put(&value, 8, 8);
        } else {
            const auto narrow = static_cast<std::int32_t>(value);
            put(&narrow, 4, 4);
        }
    }
    void bytes(const void* data, std::size_t size, std::size_t alignment) {
        put(data, size, alignment);
    }
    /// Pad to @p alignment, as the end of a nested struct does.
    void pad_to(std::size_t alignment) { put(nullptr, 0, alignment); }
    /// Pad to the struct's alignment; returns the struct's size.
    std::size_t finish();
    void* data() noexcept { return m_buffer; }

    static constexpr std::size_t kCapacity = 4096; // kernel parameters are at most 4 KiB here

  private:
    void put(const void* data, std::size_t size, std::size_t alignment);
    alignas(16) unsigned char m_buffer[kCapacity];
    std::size_t m_size = 0;
    std::size_t m_alignment = 1;
};

/// alignof of a dtype's device type in generated code.
std::size_t device_alignment(DType dtype) noexcept;

} // namespace kiln::detail
