// kiln::matmul against cuBLAS called directly on the same arrays, side by side in one process
// (issue 41's target: GPU time within 3%): square float32 and float16 matrices of 1024, 4096 and
// 8192, and batches of 64 matrices of 256 x 256. Each case runs three sides in alternating order,
// each round a CUDA-event-timed loop of calls on one stream after a warm-up:
//   kiln       kiln::matmul(a, b, {stream, &c}): planning, the thread's handle, cublasGemmEx /
//              cublasGemmStridedBatchedEx
//   cublas     the same cuBLAS call on a handle of the bench's own with the same math mode
//              (reductions in float32 only), so the difference is Kiln's own
//   cublas_default  the same call on a handle left in cuBLAS's default math mode (float16 may then
//              reduce split-K partial sums in float16)
// It prints one line per case and side (median per-call GPU time, GFLOP/s, ratio to `cublas`)
// and, with --json FILE, writes them as JSON. cuBLAS comes through Kiln's loader
// (kernels/linalg/cublas_library.hpp), so both sides call the same library.
#include "linalg/cublas_library.hpp"

#include "kiln/kiln.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

struct Case {
    const char* name;
    kiln::DType dtype;
    int batch, n;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

cublasHandle_t make_handle(bool disallow_reduced_precision, kiln::StreamRef stream) {
    const auto& f = kiln::detail::cublas();
    cublasHandle_t handle = nullptr;
    if (f.create(&handle) != CUBLAS_STATUS_SUCCESS) throw kiln::Error("cublasCreate failed");
    if (disallow_reduced_precision)
        f.set_math_mode(
            handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                              CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    f.set_stream(handle, reinterpret_cast<cudaStream_t>(stream.get()));
    return handle;
}

// The call Kiln makes for C = A B, row-major and contiguous: C^T = B^T A^T in cuBLAS's terms.
void direct_gemm(cublasHandle_t handle, const Case& c, const kiln::Array& a, const kiln::Array& b,
                 const kiln::Array& out) {
    const auto& f = kiln::detail::cublas();
    const float one = 1.0F, zero = 0.0F;
    const cudaDataType type = c.dtype == kiln::DType::float16 ? CUDA_R_16F : CUDA_R_32F;
    const int n = c.n;
    auto* pa = reinterpret_cast<void*>(a.data());
    auto* pb = reinterpret_cast<void*>(b.data());
    auto* pc = reinterpret_cast<void*>(out.data());
    cublasStatus_t status;
    if (c.batch == 1)
        status = f.gemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, pb, type, n, pa, type, n,
                        &zero, pc, type, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    else
        status = f.gemm_strided_batched(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, pb, type,
                                        n, static_cast<long long>(n) * n, pa, type, n,
                                        static_cast<long long>(n) * n, &zero, pc, type, n,
                                        static_cast<long long>(n) * n, c.batch, CUBLAS_COMPUTE_32F,
                                        CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) kiln::detail::throw_cublas_error(status, "direct gemm");
}

// Median per-call GPU time (ms) of `calls` calls per round.
struct Side {
    std::string name;
    std::function<void()> call;
    std::vector<double> per_call_ms;
};

} // namespace

int main(int argc, char** argv) {
    std::string json_path;
    int rounds = 15;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0 && i + 1 < argc) json_path = argv[++i];
        if (std::strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) rounds = std::atoi(argv[++i]);
    }
    std::string reason;
    if (!kiln::Device::available(&reason) || !kiln::matmul_available(&reason)) {
        std::printf("bench_matmul: nothing run (%s)\n", reason.c_str());
        return 77;
    }
    const std::vector<Case> cases = {
        {"float32 1024", kiln::DType::float32, 1, 1024},
        {"float32 4096", kiln::DType::float32, 1, 4096},
        {"float32 8192", kiln::DType::float32, 1, 8192},
        {"float32 64x256", kiln::DType::float32, 64, 256},
        {"float16 1024", kiln::DType::float16, 1, 1024},
        {"float16 4096", kiln::DType::float16, 1, 4096},
        {"float16 8192", kiln::DType::float16, 1, 8192},
        {"float16 64x256", kiln::DType::float16, 64, 256},
    };
    kiln::Stream stream;
    const cublasHandle_t same_mode = make_handle(true, stream);
    const cublasHandle_t default_mode = make_handle(false, stream);
    std::string json = "[\n";
    std::printf("%s\n", kiln::Device::current().name().c_str());
    for (const Case& c : cases) {
        const std::int64_t count = static_cast<std::int64_t>(c.batch) * c.n * c.n;
        kiln::OpOptions on_stream;
        on_stream.stream = stream;
        const kiln::Dims shape =
            c.batch == 1 ? kiln::Dims{c.n, c.n} : kiln::Dims{c.batch, c.n, c.n};
        const kiln::Array a = kiln::astype(kiln::sin(kiln::arange(0, static_cast<double>(count), 1,
                                                                  kiln::DType::float32, stream),
                                                     on_stream),
                                           c.dtype, on_stream)
                                  .reshape(shape);
        const kiln::Array b = kiln::astype(kiln::cos(kiln::arange(0, static_cast<double>(count), 1,
                                                                  kiln::DType::float32, stream),
                                                     on_stream),
                                           c.dtype, on_stream)
                                  .reshape(shape);
        const kiln::Array out = kiln::empty(shape, c.dtype, stream);
        kiln::MatmulOptions options;
        options.stream = stream;
        options.out = &out;
        std::vector<Side> sides = {
            {"kiln", [&] { kiln::matmul(a, b, options); }, {}},
            {"cublas", [&] { direct_gemm(same_mode, c, a, b, out); }, {}},
            {"cublas_default", [&] { direct_gemm(default_mode, c, a, b, out); }, {}},
        };
        const double flop = 2.0 * c.batch * c.n * c.n * c.n;
        // Calls per round: about 20 ms of GPU time, at least 3.
        kiln::Event start(true), stop(true);
        for (Side& side : sides)
            for (int i = 0; i < 5; ++i)
                side.call();
        start.record(stream);
        sides[0].call();
        stop.record(stream);
        stop.synchronize();
        const double one_ms = std::max(1e-3, static_cast<double>(kiln::elapsed_ms(start, stop)));
        const int calls = std::max(3, static_cast<int>(20.0 / one_ms));
        for (int round = 0; round < rounds; ++round) {
            for (std::size_t s = 0; s < sides.size(); ++s) {
                Side& side = sides[(s + static_cast<std::size_t>(round)) % sides.size()];
                start.record(stream);
                for (int i = 0; i < calls; ++i)
                    side.call();
                stop.record(stream);
                stop.synchronize();
                side.per_call_ms.push_back(kiln::elapsed_ms(start, stop) / calls);
            }
        }
        const double reference = median(sides[1].per_call_ms);
        for (const Side& side : sides) {
            const double ms = median(side.per_call_ms);
            std::printf("%-15s %-15s %9.4f ms  %8.1f TFLOP/s  %.4f x cublas  (%d rounds of %d)\n",
                        c.name, side.name.c_str(), ms, flop / (ms * 1e9), ms / reference, rounds,
                        calls);
            json += std::string("  {\"case\": \"") + c.name + "\", \"side\": \"" + side.name +
                    "\", \"median_ms\": " + std::to_string(ms) +
                    ", \"tflops\": " + std::to_string(flop / (ms * 1e9)) +
                    ", \"ratio_to_cublas\": " + std::to_string(ms / reference) + "},\n";
        }
    }
    if (json.size() > 2) json.erase(json.size() - 2, 1);
    json += "]\n";
    if (!json_path.empty()) std::ofstream(json_path) << json;
    kiln::detail::cublas().destroy(same_mode);
    kiln::detail::cublas().destroy(default_mode);
    return 0;
}
