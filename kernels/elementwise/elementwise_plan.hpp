#pragma once
// The decisions that specialize one ElementwiseKernel launch: its signature (signature.hpp).

#include "core/signature.hpp"

#include <array>
#include <cstddef>
#include <cstdint>

namespace kiln::detail {

enum class Layout : std::uint8_t {
    flat,    ///< every array operand contiguous with the loop's shape: i is the offset
    strided, ///< any layout: each element unravels its index over the collapsed shape
    rows,    ///< ndim >= 2 with a long inner axis: unravel once per row, vector loads along it
    tiled,   ///< 2-D with an operand contiguous along the other axis: transpose via shared tiles
};

/// An operand's type and kind (as OperandType), and what ElementwiseKernel's layouts decide for
/// it.
struct ElementwiseOperand {
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
    std::array<ElementwiseOperand, kMaxParams> operands{};

    /// Bytes that can differ between plans: the header and the operands in use.
    std::size_t used_bytes() const noexcept {
        return offsetof(Plan, operands) + count * sizeof(ElementwiseOperand);
    }
    bool operator==(const Plan& o) const noexcept { return same_signature(*this, o); }
};

static_assert(sizeof(ElementwiseOperand) == 6 && offsetof(Plan, operands) == 8,
              "Plan is compared bytewise: it must have no padding");

} // namespace kiln::detail
