#pragma once
// The decisions that specialize one ReductionKernel launch: its signature (signature.hpp). Grid
// sizes and the number of blocks that split one output are launch arguments, not part of it.

#include "core/signature.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace kiln::detail {

enum class ReduceLayout : std::uint8_t {
    /// A group of threads (a warp or a block, or several blocks) per output, walking the
    /// reduction; vector loads when the innermost reduced axis is contiguous. Covers reductions
    /// to a scalar, over contiguous inner axes (rows) and mixed or strided layouts.
    group,
    /// A thread per output (times `vec` neighbours), for reductions over outer axes whose kept
    /// inner axis is contiguous (columns): a warp reads consecutive outputs' elements, the
    /// reduction is split across the block's rows and across blocks.
    outer,
};

struct ReductionPlan {
    ReduceLayout layout = ReduceLayout::group;
    std::uint8_t kept_ndim = 1;  ///< collapsed kept axes (at least 1, extent 1 for a scalar)
    std::uint8_t red_ndim = 1;   ///< collapsed reduced axes (at least 1)
    std::uint8_t vec = 1;        ///< elements per vector load
    bool index64 = false;        ///< 64-bit indexing
    bool warp_group = false;     ///< group layout: a warp per output instead of a block
    std::uint8_t count = 0;      ///< operands: inputs then outputs
    std::uint8_t slot_bytes = 0; ///< bytes per partial result in the workspace
    std::uint16_t block_x = 256, block_y = 1;
    std::uint8_t unroll = 4; ///< independent loads in flight per thread
    /// A reduction never split across blocks (a warp per output, or a block per output or per
    /// column too short to split), so the kernel has no split-and-combine path (a quarter less
    /// for NVRTC to compile and load).
    bool unsplit = false;
    /// Warp layout: lanes per output, a power of two up to 32 (rows shorter than a warp's loads
    /// share a warp instead of leaving most of its lanes idle).
    std::uint8_t row_lanes = 32;
    std::uint8_t reserved[1] = {};
    std::array<OperandType, kMaxParams> operands{};

    std::size_t used_bytes() const noexcept {
        return offsetof(ReductionPlan, operands) + count * sizeof(OperandType);
    }
    bool operator==(const ReductionPlan& o) const noexcept { return same_signature(*this, o); }
};

static_assert(sizeof(OperandType) == 2 && offsetof(ReductionPlan, operands) == 16,
              "ReductionPlan is compared bytewise: it must have no padding");

} // namespace kiln::detail
