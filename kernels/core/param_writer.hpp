#pragma once
// The single struct parameter every generated kernel takes, written on the host field by field
// with C++'s alignment rules, in the order the kernel's source declares the fields.

#include "kiln/dtype.hpp"
#include "kiln/scalar.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln::detail {

/// alignof of a dtype's device type in generated code.
std::size_t device_alignment(DType dtype) noexcept;

class ParamWriter {
  public:
    /// Returns where the address went (a repeated call patches it there).
    std::size_t pointer(std::uint64_t address) { return put(&address, 8, 8); }
    void index(std::int64_t value, bool index64) {
        if (index64) {
            put(&value, 8, 8);
        } else {
            const auto narrow = static_cast<std::int32_t>(value);
            put(&narrow, 4, 4);
        }
    }
    /// @p value converted to @p dtype, as the kernel declares a scalar of that dtype. Returns
    /// where it went.
    std::size_t scalar(const Scalar& value, DType dtype);
    /// Writes @p value converted to @p dtype at @p at, as scalar() does.
    static void write_scalar(const Scalar& value, DType dtype, unsigned char* at);
    /// Pad to @p alignment, as the end of a nested struct does.
    void pad_to(std::size_t alignment) { put(nullptr, 0, alignment); }
    /// Pad to the struct's alignment; returns the struct's size.
    std::size_t finish();
    void* data() noexcept { return m_buffer; }

    static constexpr std::size_t kCapacity = 4096; // kernel parameters are at most 4 KiB here

  private:
    // Inline: a launch writes a dozen fields, each a few instructions once the compiler sees
    // the size and alignment.
    std::size_t put(const void* data, std::size_t size, std::size_t alignment) {
        const std::size_t offset = (m_size + alignment - 1) / alignment * alignment;
        if (offset + size > kCapacity) too_many();
        for (std::size_t k = m_size; k < offset; ++k)
            m_buffer[k] = 0;
        if (size) std::memcpy(m_buffer + offset, data, size);
        m_size = offset + size;
        if (alignment > m_alignment) m_alignment = alignment;
        return offset;
    }
    [[noreturn]] static void too_many();
    alignas(16) unsigned char m_buffer[kCapacity];
    std::size_t m_size = 0;
    std::size_t m_alignment = 1;
};

} // namespace kiln::detail
