#pragma once
// The decisions that specialize one ElementwiseKernel launch: a small POD whose bytes are the
// signature of the generated kernel, hashed on the hot path instead of any source.

#include "kiln/dtype.hpp"

#include <array>
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

    bool operator==(const Plan& o) const noexcept {
        return std::memcmp(this, &o, sizeof(Plan)) ==
               0; // padding is zeroed: plans are value-initialized
    }
};

struct PlanHash {
    std::size_t operator()(const Plan& plan) const noexcept {
        // FNV-1a over the bytes: ~100 bytes, a few tens of nanoseconds.
        const auto* bytes = reinterpret_cast<const unsigned char*>(&plan);
        std::uint64_t h = 1469598103934665603ull;
        for (std::size_t k = 0; k < sizeof(Plan); ++k)
            h = (h ^ bytes[k]) * 1099511628211ull;
        return static_cast<std::size_t>(h);
    }
};

} // namespace kiln::detail
