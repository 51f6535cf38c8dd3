#pragma once
// One call's operands: what every generated-kernel front end does with a call's arguments before
// its own layout decisions. The arguments are bound to the kernel's parameters (CuPy's type
// placeholders: type_binding.hpp), the input arrays broadcast, given outputs checked and missing
// ones allocated (or only described, for source_for), and the array operands seen through their
// element strides, over loop axes collapsed where every operand allows, with the index and vector
// widths their offsets and alignment allow. No heap and no strings on the hot path: only errors
// build messages.

#include "kernel_params.hpp"
#include "kiln/array.hpp"
#include "kiln/call_arguments.hpp"
#include "kiln/scalar.hpp"
#include "kiln/stream.hpp"
#include "operand_slots.hpp"
#include "signature.hpp"
#include "type_binding.hpp"

#include <algorithm>
#include <array>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace kiln::detail {

/// A set of operands: bit k for operand k.
using OperandSet = std::bitset<kMaxParams>;

/// Element strides per operand, made only for the operands that have them.
using OperandStrides = OperandSlots<Dims>;

struct Operands {
    std::size_t inputs = 0; ///< the inputs come first, then the outputs
    std::size_t count = 0;  ///< inputs and outputs
    std::size_t given = 0;  ///< arguments given: the inputs, or the inputs and the outputs
    Bindings bindings{};
    std::array<OperandType, kMaxParams> types{};
    OperandSlots<Array> arrays; ///< array and raw operands (outputs once made)
    std::array<const Scalar*, kMaxParams> scalars{};

    bool is_output(std::size_t k) const noexcept { return k >= inputs; }
    bool is(std::size_t k, OperandKind kind) const noexcept { return types[k].kind == kind; }
    /// The operands of @p kind in [first, end).
    OperandSet of_kind(OperandKind kind, std::size_t first, std::size_t end) const noexcept;
    /// The widest itemsize among @p set (1 for an empty set).
    std::size_t widest_itemsize(const OperandSet& set) const noexcept;
};

/// Binds @p count arguments (the inputs, optionally followed by the outputs) to @p params: each
/// operand's dtype (CuPy's placeholder rules), its kind (raw where the spec says so, scalar for a
/// scalar argument, array otherwise) and its array or scalar.
/// @throws ArgumentError for the wrong number of arguments or a dtype the binding refuses.
void bind_operands(const KernelParams& params, const Arg* args, std::size_t count, Operands& ops);

/// The broadcast shape of the input arrays (not raw ones); nullopt when there is none.
/// @throws ShapeError for shapes that do not broadcast.
std::optional<Dims> broadcast_inputs(const Operands& ops);

/// The loop shape of an elementwise call: the shape of the first output array given when the
/// broadcast of the inputs, @p inputs, broadcasts to it (as CuPy's (3, 1) inputs with a (3, 4)
/// output), else @p inputs; nullopt when there is neither.
std::optional<Dims> broadcast_to_given_output(const Operands& ops, std::optional<Dims> inputs);

/// Checks that each output given has @p shape; @p origin says where that shape comes from, as in
/// "output 'z' has shape (3) but <origin> (4)". @throws ShapeError.
void check_given_outputs(const KernelParams& params, const Operands& ops, const Dims& shape,
                         const char* origin);

/// Makes the outputs not given: allocated with @p shape on @p stream or, with @p allocate false
/// (source_for, compile_for), only described: contiguous at an aligned made-up address.
void make_outputs(Operands& ops, const Dims& shape, bool allocate, StreamRef stream);

/// The element strides of operand @p k's array right-aligned over @p ndim axes (at least its
/// own): 0 along the axes it broadcasts (extent 1, or axes it does not have).
/// @throws ArgumentError for strides that are not whole elements, or an output whose elements
/// overlap (a broadcast view).
Dims element_strides(const KernelParams& params, const Operands& ops, std::size_t k, int ndim);

/// Collapses a loop over @p shape in place: drops its axes of extent 1 and, when @p merge, merges
/// each axis into its outer neighbour where every operand of @p walkers walks the two as one
/// (outer stride = inner stride * inner extent). @p strides, the walkers' element strides over
/// the same axes, are collapsed alongside.
void collapse_axes(Dims& shape, OperandStrides& strides, const OperandSet& walkers, bool merge);

/// Whether a loop over @p elements, or an offset some walker reaches over @p shape with its
/// @p strides, needs 64-bit indexing.
bool needs_index64(std::int64_t elements, const Dims& shape, const OperandStrides& strides,
                   const OperandSet& walkers);

/// Whether @p array can be read and written @p vec elements at a time along @p axis: its address
/// is aligned to @p vec elements and its other @p strides (elements) are multiples of @p vec.
bool vector_aligned(const Array& array, const Dims& strides, int axis, int vec);

/// The widest vector, in elements, for operands at most @p widest_itemsize bytes wide: from 16
/// bytes (8 elements at most), halved until @p fits(vec) holds; 1 when no width does.
template <class Fits> int vector_width(std::size_t widest_itemsize, Fits&& fits) {
    for (int vec = static_cast<int>(std::min<std::size_t>(8, 16 / widest_itemsize)); vec > 1;
         vec /= 2)
        if (fits(vec)) return vec;
    return 1;
}

} // namespace kiln::detail
