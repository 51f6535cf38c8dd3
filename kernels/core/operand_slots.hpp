#pragma once
// One value per operand of a call (its array, its element strides), for up to kMaxParams
// operands, held inline and constructed only for the operands a call touches. A call pays for
// the operands it has, not for the most a kernel may declare (32 Arrays and 32 Dims built and
// destroyed on every call were a large part of its host time).

#include "signature.hpp"

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace kiln::detail {

template <class T> class OperandSlots {
    static_assert(kMaxParams <= 32, "the constructed set is a 32-bit mask");

  public:
    OperandSlots() noexcept {} // NOLINT(modernize-use-equals-default): leaves the storage raw
    OperandSlots(const OperandSlots& other) {
        for (std::size_t k = 0; k < kMaxParams; ++k)
            if (other.made(k)) make(k, *other.slot(k));
    }
    OperandSlots& operator=(const OperandSlots& other) {
        if (this != &other) {
            clear();
            for (std::size_t k = 0; k < kMaxParams; ++k)
                if (other.made(k)) make(k, *other.slot(k));
        }
        return *this;
    }
    ~OperandSlots() { clear(); }

    /// Operand @p k's value, default-constructed on first use.
    T& operator[](std::size_t k) {
        if (!made(k)) {
            ::new (static_cast<void*>(m_storage[k])) T();
            m_made |= std::uint32_t{1} << k;
        }
        return *slot(k);
    }
    /// Operand @p k's value; a default-constructed one where none was made.
    const T& operator[](std::size_t k) const noexcept {
        static const T none{};
        return made(k) ? *slot(k) : none;
    }

  private:
    void clear() noexcept {
        if constexpr (!std::is_trivially_destructible_v<T>)
            for (std::uint32_t left = m_made; left; left &= left - 1)
                slot(static_cast<std::size_t>(__builtin_ctz(left)))->~T();
        m_made = 0;
    }
    bool made(std::size_t k) const noexcept { return (m_made >> k) & 1u; }
    template <class V> void make(std::size_t k, V&& value) {
        ::new (static_cast<void*>(m_storage[k])) T(static_cast<V&&>(value));
        m_made |= std::uint32_t{1} << k;
    }
    T* slot(std::size_t k) noexcept { return std::launder(reinterpret_cast<T*>(m_storage[k])); }
    const T* slot(std::size_t k) const noexcept {
        return std::launder(reinterpret_cast<const T*>(m_storage[k]));
    }

    alignas(T) unsigned char m_storage[kMaxParams][sizeof(T)];
    std::uint32_t m_made = 0;
};

} // namespace kiln::detail
