#pragma once
/// @file
/// Linear algebra over kiln::Array with NumPy's semantics: `matmul` through cuBLAS, `trace` and
/// `diagonal` (docs/linalg.md).
///
/// `matmul` follows `numpy.matmul`: 2-D operands multiply as matrices; a 1-D first operand is a
/// row vector and a 1-D second one a column vector, the added dimension removed from the result;
/// operands of more dimensions are stacks of matrices in their last two, whose leading (batch)
/// dimensions broadcast. Result dtypes are NumPy's promotion of the two:
///
/// - float16 and bfloat16 run in their type, accumulated in float32; float32 in float32 (no TF32
///   unless MatmulOptions::allow_tf32); float64, complex64 and complex128 in their type.
/// - Two different floating or complex types, or an integer with one: NumPy's promoted type
///   (int32 with float32 is float64), each operand converted to it first.
/// - bool, int8, uint8, int16, uint16 among themselves: float64, where every sum is exact
///   (k times the largest product at most 2^53: any k for 8-bit operands, k up to 2^23 for
///   int16; refused with ArgumentError beyond), converted back to NumPy's integer result type
///   with NumPy's wrap-around, or to bool (an or of ands).
/// - int32, uint32, int64, uint64 (alone or with a smaller integer): refused with ArgumentError,
///   since no floating type holds their sums exactly; convert them with kiln::astype first.
///
/// cuBLAS is opened at run time (KILN_CUBLAS_LIBRARY, docs/environment.md), never linked: a
/// machine without it builds and runs everything else, and `matmul` says why it cannot run.
///
/// @code
/// kiln::Array c = kiln::matmul(a, b);                    // (m, k) @ (k, n) -> (m, n)
/// kiln::Array batched = kiln::matmul(stack, w.transpose()); // (8, m, k) @ (n, k)^T
/// kiln::Array t = kiln::trace(c);                        // a 0-d array, as kiln::sum gives
/// kiln::Array d = kiln::diagonal(c);                     // a view: no copy
/// @endcode

#include "kiln/array.hpp"
#include "kiln/stream.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace kiln {

/// Per-call settings of kiln::matmul.
struct MatmulOptions {
    /// The stream the result's allocation, any conversion copies and the GEMM are ordered on. The
    /// operands must be ready on it.
    StreamRef stream;
    /// Write the result here instead of allocating it: its shape must be the result's and its
    /// dtype the result's. Any layout; one that cuBLAS cannot write directly (not row-major in
    /// its last two dimensions, or batches that are not evenly spaced) is written through a
    /// temporary. It must not overlap the operands.
    const Array* out = nullptr;
    /// Let float32 (and complex64) products run on tensor cores in TF32 (10-bit mantissa inputs,
    /// float32 accumulation): several times faster on Ampere and newer, about 1e-3 relative error
    /// instead of float32's.
    bool allow_tf32 = false;
};

/// The matrix product of @p a and @p b, as `numpy.matmul` (the file comment gives the shape and
/// dtype rules), through cuBLAS on @p options.stream, with a cuBLAS handle per context and
/// thread kept by Kiln. Usable under stream capture: nothing synchronizes, and the workspace
/// comes from cuBLAS's stream-ordered pool.
///
/// Layouts: an operand whose last two dimensions are row-major or column-major (a transposed
/// view) with evenly spaced batches (or a broadcast one) goes to cuBLAS as it is, transposed
/// where it is column-major; any other layout (a sliced step in the last dimension, a partly
/// broadcast batch) is copied to a contiguous array first, on the same stream.
/// @param a the first operand, at least 1-D.
/// @param b the second operand, at least 1-D.
/// @param options the stream, an output array, TF32.
/// @return the product (@p options.out when given); 0-d for two 1-D operands.
/// @throws ShapeError for a 0-d operand, contracted extents that differ, batch shapes that do not
/// broadcast, an output of the wrong shape; ArgumentError for dtypes matmul refuses, an output
/// of the wrong dtype, an extent over 2^31 - 1; Error when cuBLAS is unavailable (why, and
/// KILN_CUBLAS_LIBRARY); CudaError, and Error for a cuBLAS failure.
Array matmul(const Array& a, const Array& b, const MatmulOptions& options = {});

/// Whether kiln::matmul can open cuBLAS; never throws and never opens the CUDA driver.
/// @param reason receives why not (the libraries tried), when given.
/// @return whether cuBLAS was opened.
bool matmul_available(std::string* reason = nullptr) noexcept;

/// The diagonal of @p a over @p axis1 and @p axis2, as `numpy.diagonal`: a view (no copy) whose
/// last dimension walks the diagonal, with @p a's other dimensions first in their order.
/// @param a an array of at least 2 dimensions.
/// @param offset 0 for the main diagonal, positive above it (towards higher @p axis2 indices),
/// negative below.
/// @param axis1 the first axis (negative counts from the end).
/// @param axis2 the second axis, not @p axis1.
/// @return a view of @p a's memory; extent 0 when @p offset lies outside the matrix.
/// @throws AxisError for an axis out of range or the same axis twice; ShapeError for fewer than
/// 2 dimensions.
Array diagonal(const Array& a, std::int64_t offset = 0, int axis1 = 0, int axis2 = 1);

/// Per-call settings of kiln::trace.
struct TraceOptions {
    /// The result (and accumulation) dtype; by default kiln::sum's for @p a's dtype (int64 for
    /// bool and signed integers, uint64 for unsigned ones, float32 accumulation of 16-bit floats).
    std::optional<DType> dtype;
    /// Write here instead of allocating (the result's shape and dtype).
    const Array* out = nullptr;
    /// The stream the result's allocation and the reduction are ordered on.
    StreamRef stream;
};

/// The sum along a diagonal, as `numpy.trace`: kiln::sum over kiln::diagonal(a, offset, axis1,
/// axis2)'s last dimension, so a 2-D @p a gives a 0-d array, as kiln::sum does, and more
/// dimensions give one sum per matrix. `numpy.trace`'s default axes are the first two; for
/// stacks of matrices in the last two, pass `axis1 = -2, axis2 = -1` (batched over the leading
/// dimensions).
/// @param a an array of at least 2 dimensions.
/// @param offset the diagonal, as in diagonal().
/// @param axis1 the first axis of the matrices.
/// @param axis2 the second axis.
/// @param options the dtype, an output array and the stream.
/// @return @p a's shape without @p axis1 and @p axis2.
/// @throws AxisError, ShapeError as diagonal(); CudaError.
Array trace(const Array& a, std::int64_t offset = 0, int axis1 = 0, int axis2 = 1,
            const TraceOptions& options = {});

} // namespace kiln
