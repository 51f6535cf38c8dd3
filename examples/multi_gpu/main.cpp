// Several GPUs: one host thread per GPU, each making its GPU current with a kiln::DeviceGuard, so
// Kiln's arrays, kernels and copies in that thread go there. A kernel compiles once per GPU
// architecture and loads once per GPU. Then every part is copied to GPU 0 (peer access where
// there is, else staged through the host). Runs on one GPU too.
// Exits 0 when the results match the host, 1 when they do not, 77 without a usable GPU.
#include <kiln/kiln.hpp>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

int main() {
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("multi_gpu: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        kiln::ElementwiseKernel square("T x", "T y", "y = x * x", "example_square");
        const int gpus = kiln::Device::count();
        const std::int64_t per_gpu = 1 << 20;
        std::vector<kiln::Array> parts(static_cast<std::size_t>(gpus));
        std::vector<std::string> errors(parts.size());
        std::vector<std::thread> threads;
        for (int d = 0; d < gpus; ++d)
            threads.emplace_back([&, d] {
                const auto at = static_cast<std::size_t>(d);
                try {
                    kiln::DeviceGuard on(d); // this thread: GPU d, until the guard ends
                    kiln::Array x = kiln::arange(double(d * per_gpu), double((d + 1) * per_gpu), 1,
                                                 kiln::DType::float64); // allocated on GPU d
                    parts[at] = square(x);                              // run on GPU d
                } catch (const std::exception& e) { // an exception must not leave a thread
                    errors[at] = e.what();
                }
            });
        for (auto& t : threads)
            t.join();

        for (int d = 0; d < gpus; ++d) {
            const auto at = static_cast<std::size_t>(d);
            if (!errors[at].empty() || parts[at].recorded_device() != d) {
                std::fprintf(stderr, "multi_gpu: GPU %d: %s\n", d, errors[at].c_str());
                return 1;
            }
            const std::vector<double> got = parts[at].copy_to(0).to_host<double>();
            for (std::int64_t i = 0; i < per_gpu; ++i) {
                const double v = double(d * per_gpu + i); // squares below 2^53: exact
                if (got[static_cast<std::size_t>(i)] != v * v) {
                    std::fprintf(stderr, "multi_gpu: GPU %d, element %lld wrong\n", d,
                                 static_cast<long long>(i));
                    return 1;
                }
            }
        }
        std::printf(
            "multi_gpu: %d GPU(s) checked; NVRTC compiles in this process: %llu\n", gpus,
            static_cast<unsigned long long>(kiln::Compiler::global().statistics().compiles));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "multi_gpu: %s\n", e.what());
        return 1;
    }
}
