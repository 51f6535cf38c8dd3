#pragma once
// kiln::matmul's plan: everything decided from the operands' shapes, strides and dtypes before any
// memory is touched (the result's shape and dtype, the type cuBLAS runs in, which operands are
// converted or copied, and the GEMM's sizes, transposes, leading dimensions and batch strides).
// Plain data over Arrays that are never read, so the CPU tests check every rule without a GPU.
//
// cuBLAS is column-major. The row-major product C = A B is computed as C^T = B^T A^T: a row-major
// matrix read as column-major is its transpose, so cuBLAS gets B first and A second, each with op
// N when row-major in memory and op T when column-major (a transposed view), and writes C^T,
// which is C in row-major order.

#include "kiln/array.hpp"
#include "kiln/dtype.hpp"

#include <cstdint>

namespace kiln::detail {

/// One operand as cuBLAS reads it.
struct GemmOperand {
    /// Copied to a C-contiguous array of the compute dtype first: its dtype differs, or its
    /// layout is one cuBLAS cannot read (the fields below then describe the copy).
    bool copy = false;
    /// The copy is of the operand broadcast to the full batch shape (its batches were partly
    /// broadcast, which no single batch stride describes).
    bool expand_batch = false;
    /// Column-major in memory (a transposed view): cuBLAS's op is T.
    bool transposed = false;
    /// Elements between consecutive rows (row-major) or columns (column-major).
    std::int64_t ld = 1;
    /// Elements between consecutive matrices of the batch; 0 when one matrix serves every batch.
    std::int64_t batch_stride = 0;
};

/// Everything matmul decides before it runs.
struct MatmulPlan {
    DType result = DType::float32;    ///< NumPy's result dtype
    DType compute = DType::float32;   ///< the dtype operands are converted to and cuBLAS runs in
    bool tf32 = false;                ///< float32 products on tensor cores in TF32
    Dims out_shape;                   ///< the result's shape (a 1-D operand's dimension removed)
    Dims full_shape;                  ///< out_shape with those dimensions kept as 1: batch..., m, n
    Dims a_shape;                     ///< a viewed as 2-D or more (a 1-D a as (1, k))
    Dims a_strides;                   ///< its strides in bytes
    Dims b_shape;                     ///< b viewed as 2-D or more (a 1-D b as (k, 1))
    Dims b_strides;                   ///< its strides in bytes
    std::int64_t m = 0, n = 0, k = 0; ///< C is m x n, the contracted extent k
    std::int64_t batch = 1;           ///< matrices in the batch (product of the batch shape)
    GemmOperand a, b;                 ///< how cuBLAS reads each operand
    /// The given output is written by cuBLAS directly; otherwise a contiguous temporary of the
    /// compute dtype is, then converted or copied into the output.
    bool out_direct = false;
    std::int64_t ldc = 0;            ///< elements between rows of C
    std::int64_t c_batch_stride = 0; ///< elements between matrices of C
};

/// Plan `matmul(a, b)` (with @p out when given, @p allow_tf32 as MatmulOptions has it). Reads
/// only shapes, strides, dtypes and addresses.
/// @throws ShapeError, ArgumentError as kiln::matmul documents.
MatmulPlan plan_matmul(const Array& a, const Array& b, const Array* out, bool allow_tf32);

/// The plan of a thread's last call, kept so that a call repeating it (the same operands and
/// output: addresses, shapes, strides, dtypes; the same TF32 choice) skips planning, which costs
/// about as much host time as a small GEMM's launch. Comparing takes a few dozen nanoseconds.
/// One per thread (kiln::matmul keeps it thread_local); plain data, never shared.
class MatmulRepeatCache {
  public:
    /// The plan of `matmul(a, b)` with @p out and @p allow_tf32: the last one when the call
    /// repeats it, else a new one (which replaces it).
    /// @throws as plan_matmul(); the cache then holds no plan.
    const MatmulPlan& plan(const Array& a, const Array& b, const Array* out, bool allow_tf32);
    /// Whether the last plan() call found its plan here.
    bool last_was_repeat() const noexcept { return m_repeat; }

  private:
    struct Operand {
        CUdeviceptr data = 0;
        DType dtype = DType::float32;
        Dims shape, strides;
        bool same(const Array& a) const noexcept {
            return data == a.data() && dtype == a.dtype() && shape == a.shape() &&
                   strides == a.strides();
        }
        void keep(const Array& a) {
            data = a.data();
            dtype = a.dtype();
            shape = a.shape();
            strides = a.strides();
        }
    };
    bool m_valid = false;
    bool m_repeat = false;
    bool m_has_out = false;
    bool m_tf32 = false;
    Operand m_a, m_b, m_out;
    MatmulPlan m_plan;
};

/// The compute dtype for @p a and @p b with contracted extent @p k (NumPy's promotion, integers
/// through float64 when exact). @throws ArgumentError for the dtypes matmul refuses.
DType matmul_compute_dtype(DType a, DType b, std::int64_t k);

} // namespace kiln::detail
