#pragma once
// The signature of a generated kernel's specialization: a small POD plan (ElementwiseKernel's
// Plan, ReductionKernel's ReductionPlan, ...) whose bytes decide the generated source. It is
// compared and hashed bytewise on the hot path instead of any source, so a plan has no padding
// and keeps the bytes it does not use value-initialized.

#include "kiln/dtype.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln::detail {

/// The most parameters (inputs and outputs) a generated kernel may declare.
inline constexpr int kMaxParams = 32;

enum class OperandKind : std::uint8_t { array, raw, scalar };

/// What every signature records per operand (inputs, then outputs).
struct OperandType {
    DType dtype = DType::float32;
    OperandKind kind = OperandKind::array;
};

/// Multiply-xor over 8-byte words of the first @p used bytes at @p data: a few nanoseconds for a
/// plan, which is all the hot path hashes.
inline std::size_t hash_signature_bytes(const void* data, std::size_t used) noexcept {
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::uint64_t h = 0x9e3779b97f4a7c15ull;
    for (std::size_t k = 0; k < used; k += 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes + k, std::min<std::size_t>(8, used - k));
        h = (h ^ word) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return static_cast<std::size_t>(h);
}

/// Equality of two plans over the bytes they use (`Plan::used_bytes()`, which depends on
/// `Plan::count`, the number of operands).
template <class Plan> bool same_signature(const Plan& a, const Plan& b) noexcept {
    return a.count == b.count && std::memcmp(&a, &b, a.used_bytes()) == 0;
}

template <class Plan> struct SignatureHash {
    std::size_t operator()(const Plan& plan) const noexcept {
        return hash_signature_bytes(&plan, plan.used_bytes());
    }
};

} // namespace kiln::detail
