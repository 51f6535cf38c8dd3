// RawKernel and RawModule: CUDA source you write yourself, compiled by NVRTC on first use for the
// GPU in front of you and kept in Kiln's disk cache, so the next run of this program compiles
// nothing. Exits 0 when the results match the host, 1 when they do not, 77 without a usable GPU.
#include <kiln/kiln.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

namespace {

// examples/ci/kernels.json warms these two sources: a manifest's source must be the same text.
constexpr const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* z, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) z[i] = a * x[i] + y[i];
})";

constexpr const char* kScale = R"(
template <class T, int K> __global__ void scale(T* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= K;
})";

} // namespace

int main() {
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("raw_kernel: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        // One kernel, looked up by its extern "C" name. Arguments are passed by value and must
        // match the parameters' sizes exactly: device buffers, pointers, scalars, plain structs.
        kiln::RawKernel saxpy(kSaxpy, "saxpy");
        const int n = 100000;
        std::vector<float> x(n), y(n), z(n);
        for (int i = 0; i < n; ++i) {
            x[i] = static_cast<float>(i % 97);
            y[i] = static_cast<float>(i % 13);
        }
        const std::size_t bytes = n * sizeof(float);
        kiln::DeviceBuffer dx(bytes), dy(bytes), dz(bytes);
        dx.copy_from_host(x.data(), bytes);
        dy.copy_from_host(y.data(), bytes);
        dz.fill_bytes(0xff); // NaN everywhere: an element the kernel misses fails the check
        saxpy({(n + 255) / 256}, {256}, 2.0f, dx, dy, dz, n); // grid, block, then the arguments
        dz.copy_to_host(z.data(), bytes);                     // waits for the kernel
        for (int i = 0; i < n; ++i)
            if (z[i] != 2.0f * x[i] + y[i]) {
                std::fprintf(stderr, "raw_kernel: saxpy wrong at %d: %g\n", i, double(z[i]));
                return 1;
            }

        // Several kernels from one source; templates are found by their C++ name, which NVRTC
        // must be told about when the module is made (name expressions).
        kiln::RawModule module(kScale, {}, {"scale<int, 3>"});
        std::vector<int> ints(1000, 7);
        kiln::Stream stream; // the module's launch and copies, in order on a stream of our own
        kiln::DeviceBuffer d_ints(ints.size() * sizeof(int), stream);
        d_ints.copy_from_host(ints.data(), d_ints.size());
        module.get_function("scale<int, 3>")(kiln::LaunchConfig{{4}, {256}, 0, stream}, d_ints,
                                             static_cast<int>(ints.size()));
        d_ints.copy_to_host(ints.data(), d_ints.size());
        for (int v : ints)
            if (v != 21) {
                std::fprintf(stderr, "raw_kernel: scale<int, 3> gave %d for 21\n", v);
                return 1;
            }
        std::printf("raw_kernel: saxpy and scale<int, 3> checked on %s\n",
                    kiln::Device::current().name().c_str());
        return 0;
    } catch (const std::exception& e) { // a CompileError carries NVRTC's log and the source
        std::fprintf(stderr, "raw_kernel: %s\n", e.what());
        return 1;
    }
}
