// Timing and profiling: kiln::benchmark (CuPy's cupyx.profiler.benchmark: host and CUDA-event
// times per repeat), a kiln::ScopedTimer that times a scope and every kernel and copy issued in it,
// and NVTX ranges that Nsight Systems shows:
//   nsys profile -t cuda,nvtx ./timing
// Exits 0 when the results match the host, 1 when they do not, 77 without a usable GPU.
#include <kiln/kiln.hpp>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

int main() {
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("timing: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        kiln::RawKernel scale(R"(
extern "C" __global__ void scale(float* x, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
})",
                              "scale");
        const int n = 1 << 22;
        kiln::Stream stream;
        kiln::DeviceBuffer x(n * sizeof(float), stream);
        std::vector<float> host(n, 1.0f);
        x.copy_from_host(host.data(), x.size());

        // 10 untimed calls (compile, load, clocks), then 200 timed ones. The events go on
        // options.stream, so the kernel must run there too. x *= 1 leaves the data as it is.
        kiln::BenchmarkOptions options;
        options.name = "scale";
        options.n_repeat = 200;
        options.stream = stream;
        const kiln::LaunchConfig launch{{(n + 255) / 256}, {256}, 0, stream};
        auto result = kiln::benchmark([&] { scale(launch, x, 1.0f, n); }, options);
        std::cout << result << '\n'; // CuPy's line: CPU and GPU-0 mean, deviation, min, max

        // A range of our own, a range around each launch, and a timer whose scope is an NVTX
        // range too; it prints a timeline of what it timed, then "step took X ms".
        kiln::nvtx::set_launch_ranges(true);
        kiln::ScopedTimerOptions timer_options;
        timer_options.nvtx = true;
        timer_options.synchronize = true; // the time includes the GPU work of the scope
        timer_options.activities = kiln::Activity::kernel | kiln::Activity::copy;
        std::size_t timed = 0;
        {
            kiln::time_range range("example", kiln::nvtx::kBlue);
            kiln::ScopedTimer timer("step", timer_options);
            scale(launch, x, 2.0f, n);
            scale(launch, x, 3.0f, n);
            x.copy_to_host(host.data(), x.size());
            timer.stop(); // report now, so results() can be read
            timed = timer.results().size();
        }
        kiln::nvtx::set_launch_ranges(false);

        if (result.gpu_times().size() != 200 || timed != 3 || host[0] != 6.0f ||
            host[n - 1] != 6.0f) {
            std::fprintf(stderr, "timing: wrong (%zu repeats, %zu activities, x = %g)\n",
                         result.gpu_times().size(), timed, double(host[0]));
            return 1;
        }
        std::printf("timing: checked; mean GPU time of scale %.2f us\n",
                    result.gpu_statistics().mean * 1e6);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "timing: %s\n", e.what());
        return 1;
    }
}
