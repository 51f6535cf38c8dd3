#include "matmul_plan.hpp"

#include "kiln/error.hpp"

#include <climits>
#include <string>

namespace kiln::detail {

namespace {

// The largest magnitude of a value of an integer (or bool) dtype matmul takes, as a double.
double magnitude_bound(DType d) {
    switch (d) {
    case DType::bool_:
        return 1.0;
    case DType::int8:
        return 128.0;
    case DType::uint8:
        return 255.0;
    case DType::int16:
        return 32768.0;
    case DType::uint16:
        return 65535.0;
    default:
        return 0.0; // 32- and 64-bit integers: refused before this is asked
    }
}

bool is_wide_integer(DType d) {
    return d == DType::int32 || d == DType::uint32 || d == DType::int64 || d == DType::uint64;
}

std::string pair_text(DType a, DType b) {
    return std::string(name(a)) + " and " + name(b);
}

// The stride of a dimension in elements, or false when it is not a whole number of them.
bool in_elements(std::int64_t bytes, std::int64_t itemsize, std::int64_t* elements) {
    if (bytes % itemsize != 0) return false;
    *elements = bytes / itemsize;
    return true;
}

// How cuBLAS reads the last two dimensions (rows x cols, strides in elements), or false when it
// cannot: row-major (unit stride along a row) or column-major (unit stride along a column), the
// other stride at least the extent it steps over. A dimension of extent 1 has no stride to obey.
bool matrix_layout(std::int64_t rows, std::int64_t cols, std::int64_t row_stride,
                   std::int64_t col_stride, GemmOperand* out) {
    const bool unit_cols = cols <= 1 || col_stride == 1;
    const bool unit_rows = rows <= 1 || row_stride == 1;
    if (unit_cols && (rows <= 1 || row_stride >= cols)) {
        out->transposed = false;
        out->ld = rows <= 1 ? (cols > 1 ? cols : 1) : row_stride;
        return true;
    }
    if (unit_rows && (cols <= 1 || col_stride >= rows)) {
        out->transposed = true;
        out->ld = cols <= 1 ? (rows > 1 ? rows : 1) : col_stride;
        return true;
    }
    return false;
}

enum class BatchLayout { strided, partial, invalid };

// The single stride (in elements) that walks an operand's matrices in the order of the result's
// flattened batch: the operand's batch dimensions (right-aligned to @p batch) must be all
// broadcast (stride 0) or each step exactly stride * (the batches inside it). @p strides are in
// elements; dimensions the operand lacks or has as 1 are broadcast.
BatchLayout batch_layout(const Dims& batch, const Dims& shape, const Dims& strides, int own_batch,
                         std::int64_t* stride) {
    const int nb = batch.size();
    bool any_broadcast = false, any_walked = false, consistent = true;
    std::int64_t found = -1, inner = 1;
    for (int i = nb - 1; i >= 0; --i) {
        const std::int64_t extent = batch[i];
        if (extent <= 1) continue;
        const int own = i - (nb - own_batch); // the operand's own dimension, if it has one
        const bool broadcast = own < 0 || shape[own] == 1 || strides[own] == 0;
        if (broadcast) {
            any_broadcast = true;
        } else {
            any_walked = true;
            const std::int64_t s = strides[own];
            // Each walked dimension steps stride * (the batches inside it), one stride for all.
            const bool whole = s >= 0 && s % inner == 0;
            if (whole && found < 0) found = s / inner;
            consistent = consistent && whole && s == found * inner;
        }
        inner *= extent;
    }
    if (!any_walked) {
        *stride = 0;
        return BatchLayout::strided;
    }
    if (any_broadcast) return BatchLayout::partial;
    if (!consistent) return BatchLayout::invalid;
    *stride = found;
    return BatchLayout::strided;
}

// Plan one operand given as (batch..., rows, cols) with byte strides.
GemmOperand plan_operand(const Dims& shape, const Dims& byte_strides, CUdeviceptr data, DType dtype,
                         DType compute, const Dims& batch) {
    GemmOperand op;
    const int nd = shape.size();
    const std::int64_t rows = shape[nd - 2], cols = shape[nd - 1];
    const auto itemsize = static_cast<std::int64_t>(kiln::itemsize(dtype));
    bool usable = dtype == compute && data % static_cast<CUdeviceptr>(itemsize) == 0;
    Dims strides;
    for (int i = 0; i < nd && usable; ++i) {
        std::int64_t e = 0;
        usable = in_elements(byte_strides[i], itemsize, &e);
        strides.push_back(e);
    }
    BatchLayout layout = BatchLayout::invalid;
    if (usable) {
        usable =
            matrix_layout(rows, cols, strides[nd - 2], strides[nd - 1], &op) && op.ld <= INT_MAX;
        if (usable) layout = batch_layout(batch, shape, strides, nd - 2, &op.batch_stride);
        usable = layout == BatchLayout::strided;
    }
    if (usable) return op;
    // A C-contiguous copy: rows of cols elements; batches packed, or one matrix for all.
    GemmOperand copy;
    copy.copy = true;
    copy.transposed = false;
    copy.ld = cols > 1 ? cols : 1;
    // Whether the operand's own batch covers every batch of the result, none, or part of it.
    std::int64_t own_batches = 1;
    for (int i = 0; i < nd - 2; ++i)
        own_batches *= shape[i];
    if (own_batches == batch.product()) {
        copy.batch_stride = own_batches > 1 ? rows * cols : 0;
    } else if (own_batches == 1) {
        copy.batch_stride = 0;
    } else {
        copy.expand_batch = true; // partly broadcast: materialize every batch
        copy.batch_stride = rows * cols;
    }
    return copy;
}

void check_int_extent(std::int64_t value, const char* what) {
    if (value > INT_MAX)
        throw ArgumentError(std::string("matmul: ") + what + " of " + std::to_string(value) +
                            " is over cuBLAS's limit of 2^31 - 1");
}

} // namespace

DType matmul_compute_dtype(DType a, DType b, std::int64_t k) {
    const DType result = promote_types(a, b);
    if (is_floating(result) || is_complex(result)) return result;
    // An integer or bool result: run in float64 where that is exact.
    if (is_wide_integer(a) || is_wide_integer(b))
        throw ArgumentError("matmul of " + pair_text(a, b) +
                            ": integer products run through float64, which cannot hold sums of "
                            "32- or 64-bit integers exactly, so Kiln refuses them; convert the "
                            "operands first (kiln::astype to float64 for rounded results, or to "
                            "int16 or smaller when the values fit)");
    const double largest_sum = magnitude_bound(a) * magnitude_bound(b) * static_cast<double>(k);
    if (largest_sum > 9007199254740992.0) // 2^53: float64 holds every integer up to it
        throw ArgumentError("matmul of " + pair_text(a, b) + " over k = " + std::to_string(k) +
                            ": the sums could exceed 2^53, where float64 (which integer products "
                            "run through) stops being exact; split k or convert to float64");
    return DType::float64;
}

MatmulPlan plan_matmul(const Array& a, const Array& b, const Array* out, bool allow_tf32) {
    if (a.ndim() == 0 || b.ndim() == 0)
        throw ShapeError("matmul: operands must have at least one dimension (got shapes " +
                         a.shape().to_string() + " and " + b.shape().to_string() +
                         "); multiply by a scalar with kiln::multiply");
    MatmulPlan plan;
    // A 1-D a is a row (1, k), a 1-D b a column (k, 1); the added dimension leaves the result.
    plan.a_shape = a.shape();
    plan.a_strides = a.strides();
    if (a.ndim() == 1) {
        plan.a_shape = Dims{1, a.shape()[0]};
        plan.a_strides = Dims{0, a.strides()[0]};
    }
    plan.b_shape = b.shape();
    plan.b_strides = b.strides();
    if (b.ndim() == 1) {
        plan.b_shape = Dims{b.shape()[0], 1};
        plan.b_strides = Dims{b.strides()[0], 0};
    }
    const int na = plan.a_shape.size(), nb = plan.b_shape.size();
    plan.m = plan.a_shape[na - 2];
    plan.k = plan.a_shape[na - 1];
    plan.n = plan.b_shape[nb - 1];
    if (plan.b_shape[nb - 2] != plan.k)
        throw ShapeError("matmul: shapes " + a.shape().to_string() + " and " +
                         b.shape().to_string() +
                         " do not multiply: the last dimension of the "
                         "first (" +
                         std::to_string(plan.k) + ") differs from the " +
                         (b.ndim() == 1 ? "only" : "second-to-last") +
                         " dimension of the second (" + std::to_string(plan.b_shape[nb - 2]) + ")");
    Dims a_batch, b_batch;
    for (int i = 0; i < na - 2; ++i)
        a_batch.push_back(plan.a_shape[i]);
    for (int i = 0; i < nb - 2; ++i)
        b_batch.push_back(plan.b_shape[i]);
    Dims batch;
    try {
        batch = broadcast_shapes({a_batch, b_batch});
    } catch (const ShapeError&) {
        throw ShapeError("matmul: the batch dimensions of shapes " + a.shape().to_string() +
                         " and " + b.shape().to_string() + " (" + a_batch.to_string() + " and " +
                         b_batch.to_string() + ") do not broadcast");
    }
    plan.batch = batch.product();
    plan.full_shape = batch;
    plan.full_shape.push_back(plan.m);
    plan.full_shape.push_back(plan.n);
    plan.out_shape = batch;
    if (a.ndim() > 1) plan.out_shape.push_back(plan.m);
    if (b.ndim() > 1) plan.out_shape.push_back(plan.n);

    plan.result = promote_types(a.dtype(), b.dtype());
    plan.compute = matmul_compute_dtype(a.dtype(), b.dtype(), plan.k);
    plan.tf32 = allow_tf32 && (plan.compute == DType::float32 || plan.compute == DType::complex64);
    check_int_extent(plan.m, "m");
    check_int_extent(plan.n, "n");
    check_int_extent(plan.k, "k");
    check_int_extent(plan.batch, "the batch count");

    if (out) {
        if (out->shape() != plan.out_shape)
            throw ShapeError("matmul: the output has shape " + out->shape().to_string() +
                             "; the product of " + a.shape().to_string() + " and " +
                             b.shape().to_string() + " has shape " + plan.out_shape.to_string());
        if (out->dtype() != plan.result)
            throw ArgumentError(std::string("matmul: the output has dtype ") + name(out->dtype()) +
                                "; the product of " + pair_text(a.dtype(), b.dtype()) + " is " +
                                name(plan.result));
    }
    plan.a = plan_operand(plan.a_shape, plan.a_strides, a.data(), a.dtype(), plan.compute, batch);
    plan.b = plan_operand(plan.b_shape, plan.b_strides, b.data(), b.dtype(), plan.compute, batch);

    // C: row-major with evenly spaced batches, written in place; else a contiguous temporary.
    plan.ldc = plan.n > 1 ? plan.n : 1;
    plan.c_batch_stride = plan.batch > 1 ? plan.m * plan.n : 0;
    if (out && plan.result == plan.compute) {
        // The output viewed as (batch..., m, n): a removed dimension comes back with extent 1.
        Dims strides = out->strides();
        Dims full_strides;
        for (int i = 0; i < batch.size(); ++i)
            full_strides.push_back(strides[i]);
        int next = batch.size();
        full_strides.push_back(a.ndim() > 1 ? strides[next++] : 0);
        full_strides.push_back(b.ndim() > 1 ? strides[next] : 0);
        GemmOperand c = plan_operand(plan.full_shape, full_strides, out->data(), out->dtype(),
                                     plan.compute, batch);
        // cuBLAS writes C^T column-major: C must be row-major, and no two of its elements may
        // share memory (a broadcast output dimension).
        bool distinct = true;
        for (int i = 0; i < plan.full_shape.size(); ++i)
            distinct = distinct && (plan.full_shape[i] <= 1 || full_strides[i] != 0);
        // Nor may one matrix reach into the next.
        const bool apart = plan.batch <= 1 ||
                           (c.batch_stride != 0 && (plan.m - 1) * c.ld + plan.n <= c.batch_stride);
        if (!c.copy && !c.transposed && distinct && apart) {
            plan.out_direct = true;
            plan.ldc = c.ld;
            plan.c_batch_stride = c.batch_stride;
        }
    }
    return plan;
}

const MatmulPlan& MatmulRepeatCache::plan(const Array& a, const Array& b, const Array* out,
                                          bool allow_tf32) {
    m_repeat = m_valid && m_tf32 == allow_tf32 && m_has_out == (out != nullptr) && m_a.same(a) &&
               m_b.same(b) && (!out || m_out.same(*out));
    if (m_repeat) return m_plan;
    m_valid = false; // until the new plan is made: a call that throws leaves none
    m_plan = plan_matmul(a, b, out, allow_tf32);
    m_a.keep(a);
    m_b.keep(b);
    if (out) m_out.keep(*out);
    m_has_out = out != nullptr;
    m_tf32 = allow_tf32;
    m_valid = true;
    return m_plan;
}

} // namespace kiln::detail
