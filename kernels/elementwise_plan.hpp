#pragma once
// The decisions that specialize one ElementwiseKernel launch: a small POD whose bytes are the
// signature of the generated kernel, hashed on the hot path instead of any source.

#include "kiln/dtype.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace kiln::detail {

inline constexpr int kMaxParams = 32;

enum class Layout : std::uint8_t {
    flat,    ///< every array operand contiguous with the loop's shape: i is the offset
    strided, ///< any layout: each element unravels its index over the collapsed shape
    rows,    ///< ndim >= 2 with a long inner axis: unravel once per row, vector loads along it
    tiled,   ///< 2-D with an operand contiguous along the other axis: transpose via shared tiles
};

enum class OperandKind : std::uint8_t { array, raw, scalar };

struct OperandPlan {
    DType dtype = DType::float32;
    OperandKind kind = OperandKind::array;
    std::uint8_t raw_ndim = 0;    ///< raw arrays: their own ndim
    bool raw_contiguous = false;  ///< raw arrays: C-contiguous (index directly)
    bool transposed = false;      ///< tiled: contiguous along axis 0, staged through shared memory
    bool inner_broadcast = false; ///< rows: stride 0 along the inner axis
};

struct Plan {
    Layout layout = Layout::flat;
    std::uint8_t ndim = 1;    ///< loop ndim after collapsing
    std::uint8_t vec = 1;     ///< elements per vector access (flat, rows)
    bool index64 = false;     ///< 64-bit indexing
    bool load_outputs = true; ///< the operation may read its outputs
    std::uint8_t count = 0;   ///< operands: inputs then outputs
    std::uint16_t block = 256;
    std::array<OperandPlan, kMaxParams> operands{};

    /// Bytes that can differ between plans: the header and the operands in use (the rest stay
    /// value-initialized zeros). Plan has no padding, so bytewise comparison is exact.
    std::size_t used_bytes() const noexcept {
        return offsetof(Plan, operands) + count * sizeof(OperandPlan);
    }
    bool operator==(const Plan& o) const noexcept {
        return count == o.count && std::memcmp(this, &o, used_bytes()) == 0;
    }
};

static_assert(sizeof(OperandPlan) == 6 && offsetof(Plan, operands) == 8,
              "Plan is compared bytewise: it must have no padding");

/// Multiply-xor over 8-byte words of the first @p used bytes at @p data: a few nanoseconds for a
/// plan, which is all the hot path hashes.
inline std::size_t hash_plan_bytes(const void* data, std::size_t used) noexcept {
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

struct PlanHash {
    std::size_t operator()(const Plan& plan) const noexcept {
        return hash_plan_bytes(&plan, plan.used_bytes());
    }
};

} // namespace kiln::detail
