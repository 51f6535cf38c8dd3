// The first exercise of every GPU course: C = A B for square float32 matrices, three ways.
//   naive:  one thread per element of C, reading a row of A and a column of B from global memory.
//   tiled:  a 128 x 128 tile of C per block of 256 threads. The block stages 128 x 8 slices of A
//           and 8 x 128 slices of B in shared memory (each element of A and B is read from global
//           memory once per block instead of once per thread), and each thread keeps an 8 x 8
//           sub-tile of C in registers ("register blocking"): every value it loads from shared
//           memory is used 8 times, so the loop does 64 multiply-adds per 16 shared loads. The
//           8 x 8 is two 4 x 4 halves 64 rows and columns apart, so the threads of a warp read
//           neighbouring float4s of shared memory (no bank conflicts). Sizes: multiples of 128.
//   kiln::matmul: cuBLAS's SGEMM (float32, no TF32), and with TF32 tensor cores allowed.
// Each result is checked against kiln::matmul's, each is timed with kiln::benchmark (CUDA events,
// medians), and the figures go to a CSV (--csv FILE) that plot.py turns into GFLOP/s against size
// with the device's FP32 (and TF32 tensor-core) peak marked. Last, kiln::trace on the GPU against
// a loop on the host: the CPU-against-GPU comparison users make.
// Exits 0 when every result matches, 1 when one does not, 77 without a usable GPU or cuBLAS.
#include <kiln/kiln.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

namespace {

const char* const kSource = R"(
extern "C" __global__ void matmul_naive(int n, const float* a, const float* b, float* c) {
    const int col = blockIdx.x * blockDim.x + threadIdx.x; // neighbours read neighbouring b
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= n) return;
    float sum = 0.0f;
    for (int k = 0; k < n; ++k)
        sum += a[(size_t)row * n + k] * b[(size_t)k * n + col];
    c[(size_t)row * n + col] = sum;
}

// 128 x 128 tile of C per block, 256 threads, each an 8 x 8 register tile; n % 128 == 0.
extern "C" __global__ void __launch_bounds__(256)
matmul_tiled(int n, const float* __restrict__ a, const float* __restrict__ b,
             float* __restrict__ c) {
    constexpr int BM = 128, BN = 128, BK = 8;
    __shared__ __align__(16) float as[2][BK][BM]; // A's slice, transposed: as[k][row]
    __shared__ __align__(16) float bs[2][BK][BN]; // B's slice: bs[k][col]
    const int t = threadIdx.x;
    const int ty = t / 16, tx = t % 16; // the thread's rows ty*4 (+64), columns tx*4 (+64)
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // Loads: A's 128 x 8 slice is 256 float4s, one per thread; so is B's 8 x 128 slice.
    const int a_row = t / 2, a_col = (t % 2) * 4;
    const int b_row = t / 32, b_col = (t % 32) * 4;
    const float* a_at = a + (size_t)(row0 + a_row) * n + a_col;
    const float* b_at = b + (size_t)b_row * n + col0 + b_col;
    float acc[8][8] = {};
    float4 a_next = *reinterpret_cast<const float4*>(a_at);
    float4 b_next = *reinterpret_cast<const float4*>(b_at);
    int stage = 0;
    for (int k0 = 0; k0 < n; k0 += BK) {
        as[stage][a_col + 0][a_row] = a_next.x;
        as[stage][a_col + 1][a_row] = a_next.y;
        as[stage][a_col + 2][a_row] = a_next.z;
        as[stage][a_col + 3][a_row] = a_next.w;
        *reinterpret_cast<float4*>(&bs[stage][b_row][b_col]) = b_next;
        __syncthreads();
        // The next slices' loads are in flight while this one is multiplied.
        if (k0 + BK < n) {
            a_next = *reinterpret_cast<const float4*>(a_at + k0 + BK);
            b_next = *reinterpret_cast<const float4*>(b_at + (size_t)(k0 + BK) * n);
        }
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float ra[8], rb[8];
            *reinterpret_cast<float4*>(ra) = *reinterpret_cast<const float4*>(&as[stage][k][ty * 4]);
            *reinterpret_cast<float4*>(ra + 4) =
                *reinterpret_cast<const float4*>(&as[stage][k][64 + ty * 4]);
            *reinterpret_cast<float4*>(rb) = *reinterpret_cast<const float4*>(&bs[stage][k][tx * 4]);
            *reinterpret_cast<float4*>(rb + 4) =
                *reinterpret_cast<const float4*>(&bs[stage][k][64 + tx * 4]);
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[i][j] += ra[i] * rb[j];
        }
        stage ^= 1; // two buffers: the next slice is stored while others still read this one
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int row = row0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        float* out = c + (size_t)row * n + col0;
        *reinterpret_cast<float4*>(out + tx * 4) =
            make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4*>(out + 64 + tx * 4) =
            make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
)";

struct Row {
    std::string method;
    int n = 0;
    double gpu_ms = 0;
    double gflops = 0;
    double max_error = 0;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// kiln::benchmark's times are in seconds, as CuPy's are: their median in milliseconds.
double median_ms(const std::vector<double>& seconds) {
    return median(seconds) * 1e3;
}

// The largest |x - y| over two results, NaN if either has one (an unwritten element). The copies
// are queued on @p stream, after the work that wrote x and y there (the legacy default stream
// would not wait for a non-blocking stream's work).
double max_difference(const kiln::Array& x, const kiln::Array& y, kiln::StreamRef stream) {
    const std::vector<float> a = x.to_host<float>(stream), b = y.to_host<float>(stream);
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
        if (std::isnan(d)) return d;
        worst = std::max(worst, d);
    }
    return worst;
}

// FP32 lanes per SM (2 FLOP each per clock) by architecture, and dense TF32 tensor-core FLOP per
// SM per clock where known (A100: 1024; H100/H200: 2048 at the boost clock NVIDIA quotes).
int fp32_lanes(int major, int minor) {
    if (major == 8 && minor == 0) return 64;
    return major >= 8 ? 128 : 64;
}
int tf32_flop_per_clock(int major, int minor) {
    if (major == 8 && minor == 0) return 1024;
    if (major == 9 && minor == 0) return 2048;
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    bool quick = false;
    std::string csv_path = "matmul.csv";
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--quick") == 0) quick = true;
        if (std::strcmp(argv[i], "--csv") == 0 && i + 1 < argc) csv_path = argv[++i];
    }
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("matmul: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        if (!kiln::matmul_available(&reason)) {
            std::printf("matmul: no cuBLAS, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        const kiln::Device device = kiln::Device::current();
        const int major = device.compute_capability_major(),
                  minor = device.compute_capability_minor();
        const double clock_ghz = device.attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1e6;
        const double sms = device.multiprocessor_count();
        const double fp32_peak = sms * fp32_lanes(major, minor) * 2 * clock_ghz; // GFLOP/s
        const double tf32_peak = sms * tf32_flop_per_clock(major, minor) * clock_ghz;
        std::printf("%s (sm_%d%d, %g SMs at %.2f GHz): FP32 peak %.0f GFLOP/s, TF32 tensor peak "
                    "%.0f GFLOP/s\n",
                    device.name().c_str(), major, minor, sms, clock_ghz, fp32_peak, tf32_peak);

        kiln::RawModule module(kSource);
        const kiln::RawKernel naive = module.get_function("matmul_naive");
        const kiln::RawKernel tiled = module.get_function("matmul_tiled");
        kiln::Stream stream;
        std::vector<int> sizes = {128, 256, 512, 1024, 2048, 4096, 8192};
        if (quick) sizes = {128, 256, 512, 1024};
        std::vector<Row> rows;
        bool ok = true;
        for (const int n : sizes) {
            // Values in [-1, 1]; each sum is of n terms, so float32's error grows with n.
            const auto count = static_cast<std::int64_t>(n) * n;
            kiln::OpOptions on_stream;
            on_stream.stream = stream;
            const kiln::Array a = kiln::sin(kiln::arange(0, static_cast<double>(count), 1,
                                                         kiln::DType::float32, stream),
                                            on_stream)
                                      .reshape({n, n});
            const kiln::Array b = kiln::cos(kiln::arange(0, static_cast<double>(count), 1,
                                                         kiln::DType::float32, stream),
                                            on_stream)
                                      .reshape({n, n});
            kiln::MatmulOptions options;
            options.stream = stream;
            const kiln::Array reference = kiln::matmul(a, b, options);
            const double flop = 2.0 * n * n * n;
            const double tolerance = 1e-5 * n; // |a|, |b| <= 1: sum |a||b| <= n

            struct Method {
                const char* name;
                std::function<void(const kiln::Array&)> run;
            };
            const std::vector<Method> methods = {
                {"naive",
                 [&](const kiln::Array& c) {
                     naive(kiln::LaunchConfig{{static_cast<unsigned>((n + 15) / 16),
                                               static_cast<unsigned>((n + 15) / 16)},
                                              {16, 16},
                                              0,
                                              stream},
                           n, a.data<float>(), b.data<float>(), c.data<float>());
                 }},
                {"tiled",
                 [&](const kiln::Array& c) {
                     tiled(kiln::LaunchConfig{{static_cast<unsigned>(n / 128),
                                               static_cast<unsigned>(n / 128)},
                                              {256},
                                              0,
                                              stream},
                           n, a.data<float>(), b.data<float>(), c.data<float>());
                 }},
                {"kiln_matmul",
                 [&](const kiln::Array& c) {
                     kiln::MatmulOptions o;
                     o.stream = stream;
                     o.out = &c;
                     kiln::matmul(a, b, o);
                 }},
                {"kiln_matmul_tf32",
                 [&](const kiln::Array& c) {
                     kiln::MatmulOptions o;
                     o.stream = stream;
                     o.out = &c;
                     o.allow_tf32 = true;
                     kiln::matmul(a, b, o);
                 }},
            };
            for (const Method& method : methods) {
                const kiln::Array c =
                    kiln::full({n, n}, std::nan(""), kiln::DType::float32, stream);
                method.run(c);
                const double error = max_difference(c, reference, stream);
                // TF32 rounds the inputs to 10 mantissa bits: about 1e-3 of each term.
                const bool tf32 = std::strcmp(method.name, "kiln_matmul_tf32") == 0;
                const double allowed = tf32 ? 2e-3 * n : tolerance;
                if (!(error <= allowed)) {
                    std::printf("%s at %d: max difference %g from kiln::matmul, over %g\n",
                                method.name, n, error, allowed);
                    ok = false;
                }
                kiln::BenchmarkOptions bench;
                bench.name = method.name;
                bench.stream = stream;
                bench.n_warmup = 2;
                bench.n_repeat = 50;
                bench.max_duration = quick ? 0.2 : 0.5;
                const kiln::BenchmarkResult result = kiln::benchmark([&] { method.run(c); }, bench);
                Row row{method.name, n, median_ms(result.gpu_times()), 0, error};
                row.gflops = flop / (row.gpu_ms * 1e6);
                rows.push_back(row);
                std::printf("%-17s n=%5d  %10.3f ms  %9.0f GFLOP/s  max diff %.2e\n", method.name,
                            n, row.gpu_ms, row.gflops, error);
            }
        }
        // The tiled kernel against cuBLAS's SGEMM at 4096 (the exercise's target: a third).
        double tiled_4096 = 0, cublas_4096 = 0;
        for (const Row& row : rows) {
            if (row.n == 4096 && row.method == "tiled") tiled_4096 = row.gflops;
            if (row.n == 4096 && row.method == "kiln_matmul") cublas_4096 = row.gflops;
        }
        if (cublas_4096 > 0)
            std::printf("tiled / cuBLAS SGEMM at 4096: %.2f\n", tiled_4096 / cublas_4096);

        // trace: the GPU's reduction of the diagonal against a host loop over the same matrix.
        const int tn = quick ? 2048 : 8192;
        const kiln::Array m = kiln::sin(
            kiln::arange(0, static_cast<double>(tn) * tn, 1, kiln::DType::float32, stream));
        const kiln::Array square = m.reshape({tn, tn});
        kiln::TraceOptions trace_options;
        trace_options.stream = stream;
        kiln::BenchmarkOptions bench;
        bench.name = "trace";
        bench.stream = stream;
        bench.n_repeat = 200;
        const auto gpu =
            kiln::benchmark([&] { kiln::trace(square, 0, 0, 1, trace_options); }, bench);
        const double gpu_trace =
            kiln::trace(square, 0, 0, 1, trace_options).to_host<float>(stream)[0];
        const std::vector<float> host = square.to_host<float>(stream);
        std::vector<double> host_times;
        double host_trace = 0;
        for (int repeat = 0; repeat < 20; ++repeat) {
            const auto start = std::chrono::steady_clock::now();
            float sum = 0.0f;
            for (int i = 0; i < tn; ++i)
                sum += host[static_cast<std::size_t>(i) * tn + i];
            host_times.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count());
            host_trace = sum;
        }
        std::printf("trace of %d x %d: GPU %.4f ms (kiln::trace, median), host loop %.4f ms; "
                    "values %.6g and %.6g\n",
                    tn, tn, median_ms(gpu.gpu_times()), median(host_times), gpu_trace, host_trace);
        if (std::fabs(gpu_trace - host_trace) > 1e-3 * tn) {
            std::printf("trace: GPU and host differ\n");
            ok = false;
        }

        std::ofstream csv(csv_path);
        csv << "# device=" << device.name() << ",fp32_peak_gflops=" << fp32_peak
            << ",tf32_peak_gflops=" << tf32_peak << ",trace_n=" << tn
            << ",trace_gpu_ms=" << median_ms(gpu.gpu_times())
            << ",trace_host_ms=" << median(host_times) << "\n";
        csv << "method,n,gpu_ms,gflops,max_diff\n";
        for (const Row& row : rows)
            csv << row.method << ',' << row.n << ',' << row.gpu_ms << ',' << row.gflops << ','
                << row.max_error << '\n';
        std::printf("matmul: %s (%s)\n", ok ? "every result matches" : "MISMATCH",
                    csv_path.c_str());
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::printf("matmul: %s\n", e.what());
        return 1;
    }
}
