#include "cublas_library.hpp"
#include "matmul_plan.hpp"

#include "kiln/device.hpp"
#include "kiln/linalg.hpp"
#include "kiln/ops.hpp"

#include "driver/driver.hpp"

#include <cuComplex.h>

#include <string>
#include <utility>
#include <vector>

namespace kiln {

namespace {

// The cuBLAS handles of one thread, one per context (cuBLAS binds a handle to the context current
// when it is made). A handle is not safe to use from two threads at once, so none is shared; each
// is destroyed when its thread ends.
class ThreadHandles {
  public:
    ThreadHandles() = default;
    ThreadHandles(const ThreadHandles&) = delete;
    ThreadHandles& operator=(const ThreadHandles&) = delete;
    ~ThreadHandles() {
        if (m_entries.empty()) return;
        try {
            const detail::CublasFunctions& f = detail::cublas(); // opened: there are handles
            for (Entry& entry : m_entries)
                f.destroy(entry.handle); // a status here has no one to go to
        } catch (...) {                  // NOLINT(bugprone-empty-catch): destructors never throw
        }
    }

    // The calling thread's handle for @p context, made on first use, set to @p stream.
    cublasHandle_t get(CUcontext context, StreamRef stream) {
        Entry* entry = find(context);
        if (!entry) entry = &make(context);
        if (!entry->stream_set || entry->stream != stream.get()) {
            // CUstream and cudaStream_t are the same driver object.
            const cublasStatus_t status = detail::cublas().set_stream(
                entry->handle, reinterpret_cast<cudaStream_t>(stream.get()));
            if (status != CUBLAS_STATUS_SUCCESS)
                detail::throw_cublas_error(status, "cublasSetStream");
            entry->stream = stream.get();
            entry->stream_set = true;
        }
        return entry->handle;
    }

  private:
    struct Entry {
        CUcontext context = nullptr;
        cublasHandle_t handle = nullptr;
        CUstream stream = nullptr;
        bool stream_set = false;
    };

    Entry* find(CUcontext context) noexcept {
        for (Entry& entry : m_entries)
            if (entry.context == context) return &entry;
        return nullptr;
    }

    Entry& make(CUcontext context) {
        const detail::CublasFunctions& f = detail::cublas();
        // Making a handle may allocate: allowed even while this thread's stream is captured into
        // a graph (relaxed mode for this thread, for the length of the call), so the first matmul
        // may be the one captured.
        CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
        KILN_CU(cuThreadExchangeStreamCaptureMode(&mode));
        cublasHandle_t handle = nullptr;
        cublasStatus_t status = f.create(&handle);
        if (status == CUBLAS_STATUS_SUCCESS) {
            // float16 and bfloat16 products accumulate in float32 to the end: no split-K
            // reduction in the output's precision.
            status = f.set_math_mode(handle, static_cast<cublasMath_t>(
                                                 CUBLAS_DEFAULT_MATH |
                                                 CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
            if (status != CUBLAS_STATUS_SUCCESS) f.destroy(handle);
        }
        detail::driver().cuThreadExchangeStreamCaptureMode(&mode);
        if (status != CUBLAS_STATUS_SUCCESS) detail::throw_cublas_error(status, "cublasCreate");
        m_entries.push_back({context, handle, nullptr, false});
        return m_entries.back();
    }

    std::vector<Entry> m_entries;
};

cudaDataType cuda_type_of(DType d) {
    switch (d) {
    case DType::float16:
        return CUDA_R_16F;
    case DType::bfloat16:
        return CUDA_R_16BF;
    case DType::float32:
        return CUDA_R_32F;
    case DType::float64:
        return CUDA_R_64F;
    case DType::complex64:
        return CUDA_C_32F;
    default:
        return CUDA_C_64F; // complex128: the plan gives no other compute dtype
    }
}

// A view of @p a's memory in another shape (strides in bytes), keeping its owner.
Array view(const Array& a, const Dims& shape, const Dims& strides) {
    return Array::wrap(a.data(), shape, a.dtype(), strides, a.owner(), a.recorded_device());
}

// The address cuBLAS reads @p operand at: its own memory, or a converted or contiguous copy made
// on @p stream when the plan says so (kept alive in @p copy until the GEMM is queued). The common
// case makes no Array at all: a view costs more host time than the rest of the plan.
CUdeviceptr operand_address(const Array& operand, const Dims& shape, const Dims& strides,
                            const detail::GemmOperand& op, const Dims& full_batch, DType compute,
                            StreamRef stream, Array& copy) {
    if (!op.copy) return operand.data();
    Array viewed = view(operand, shape, strides);
    if (op.expand_batch) {
        Dims expanded = full_batch;
        expanded.push_back(shape[shape.size() - 2]);
        expanded.push_back(shape[shape.size() - 1]);
        viewed = viewed.broadcast_to(expanded);
    }
    OpOptions on_stream;
    on_stream.stream = stream;
    copy = astype(viewed, compute, on_stream);
    return copy.data();
}

void* address(CUdeviceptr pointer) {
    return reinterpret_cast<void*>(pointer); // NOLINT(performance-no-int-to-ptr): device address
}

void run_gemm(const detail::MatmulPlan& plan, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c,
              StreamRef stream) {
    static thread_local ThreadHandles handles;
    const cublasHandle_t handle = handles.get(detail::current_context(), stream);
    const detail::CublasFunctions& f = detail::cublas();
    const cudaDataType type = cuda_type_of(plan.compute);
    cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
    const float one_f = 1.0F, zero_f = 0.0F;
    const double one_d = 1.0, zero_d = 0.0;
    const cuComplex one_c = make_cuComplex(1.0F, 0.0F), zero_c = make_cuComplex(0.0F, 0.0F);
    const cuDoubleComplex one_z = make_cuDoubleComplex(1.0, 0.0),
                          zero_z = make_cuDoubleComplex(0.0, 0.0);
    const void* alpha = &one_f;
    const void* beta = &zero_f;
    switch (plan.compute) {
    case DType::float64:
        compute = CUBLAS_COMPUTE_64F;
        alpha = &one_d;
        beta = &zero_d;
        break;
    case DType::complex64:
        compute = plan.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        alpha = &one_c;
        beta = &zero_c;
        break;
    case DType::complex128:
        compute = CUBLAS_COMPUTE_64F;
        alpha = &one_z;
        beta = &zero_z;
        break;
    case DType::float32:
        compute = plan.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
        break;
    default: // float16, bfloat16: float32 accumulation and scalars
        break;
    }
    // C^T (n x m) = op(B') op(A'): matmul_plan.hpp says why the operands swap.
    const cublasOperation_t op_b = plan.b.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = plan.a.transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto m = static_cast<int>(plan.n), n = static_cast<int>(plan.m),
               k = static_cast<int>(plan.k);
    const auto lda = static_cast<int>(plan.b.ld), ldb = static_cast<int>(plan.a.ld),
               ldc = static_cast<int>(plan.ldc);
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    if (plan.batch == 1) {
        status = f.gemm(handle, op_b, op_a, m, n, k, alpha, address(b), type, lda, address(a), type,
                        ldb, beta, address(c), type, ldc, compute, CUBLAS_GEMM_DEFAULT);
        if (status != CUBLAS_STATUS_SUCCESS) detail::throw_cublas_error(status, "cublasGemmEx");
        return;
    }
    status = f.gemm_strided_batched(handle, op_b, op_a, m, n, k, alpha, address(b), type, lda,
                                    plan.b.batch_stride, address(a), type, ldb, plan.a.batch_stride,
                                    beta, address(c), type, ldc, plan.c_batch_stride,
                                    static_cast<int>(plan.batch), compute, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS)
        detail::throw_cublas_error(status, "cublasGemmStridedBatchedEx");
}

void check_devices(const Array& a, const Array& b, const Array* out) {
    const int device = detail::current_device_ordinal();
    for (const Array* operand : {&a, &b, out}) {
        if (!operand) continue;
        const int on = operand->recorded_device();
        if (on >= 0 && on != device)
            throw ArgumentError("matmul: an operand is on device " + std::to_string(on) +
                                " but the call runs on device " + std::to_string(device) +
                                " (the current context's); copy it with Array::copy_to or make "
                                "its device current (kiln::DeviceGuard)");
    }
}

} // namespace

bool matmul_available(std::string* reason) noexcept {
    return detail::cublas_available(reason);
}

Array matmul(const Array& a, const Array& b, const MatmulOptions& options) {
    // A call that repeats this thread's last one skips planning. Nothing below calls matmul
    // again, so the cached plan stays as it is for the length of the call.
    static thread_local detail::MatmulRepeatCache repeat;
    const detail::MatmulPlan& plan = repeat.plan(a, b, options.out, options.allow_tf32);
    detail::cublas(); // unavailable: say so before anything is allocated
    check_devices(a, b, options.out);
    const StreamRef stream = options.stream;
    Dims batch; // the result's batch dimensions: full_shape without m and n
    for (int i = 0; i + 2 < plan.full_shape.size(); ++i)
        batch.push_back(plan.full_shape[i]);

    // C: the given output in place, or a contiguous temporary of the compute dtype.
    Array c;
    if (!plan.out_direct) c = empty(plan.full_shape, plan.compute, stream);
    const CUdeviceptr c_address = plan.out_direct ? options.out->data() : c.data();
    if (plan.batch * plan.m * plan.n > 0) {
        if (plan.k == 0) {
            fill(plan.out_direct ? *options.out : c, 0, stream); // a sum of nothing
        } else {
            Array a_copy, b_copy;
            const CUdeviceptr a_address = operand_address(a, plan.a_shape, plan.a_strides, plan.a,
                                                          batch, plan.compute, stream, a_copy);
            const CUdeviceptr b_address = operand_address(b, plan.b_shape, plan.b_strides, plan.b,
                                                          batch, plan.compute, stream, b_copy);
            run_gemm(plan, a_address, b_address, c_address, stream);
        }
    }
    if (plan.out_direct) return *options.out;

    OpOptions on_stream;
    on_stream.stream = stream;
    Array result = c.reshape(plan.out_shape);
    if (plan.result != plan.compute && !is_floating(plan.result) && !is_complex(plan.result) &&
        !is_bool(plan.result) && plan.result != DType::int64) {
        // Exact integers in float64 go to int64 first, then wrap into a narrower type as NumPy's
        // integer arithmetic does (a float converted straight to int8 would saturate).
        result = astype(result, DType::int64, on_stream);
    }
    if (options.out) {
        on_stream.out = options.out;
        return astype(result, plan.result, on_stream);
    }
    if (result.dtype() != plan.result) result = astype(result, plan.result, on_stream);
    return result;
}

} // namespace kiln
