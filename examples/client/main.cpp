// A client of Kiln: compiles a kernel for sm_90 without needing a GPU, then, where a device is
// usable, runs an ElementwiseKernel and checks its result.
#include <kiln/kiln.hpp>
#include <kiln/version.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main() {
    try {
        std::printf("Kiln %s\n", KILN_VERSION_STRING);
        kiln::RawKernel kernel(R"(extern "C" __global__ void set(int* p) { *p = 42; })", "set",
                               kiln::CompileOptions::for_arch("sm_90"));
        auto program = kernel.compile();
        std::printf("compiled for sm_90: key %s, %zu cubin bytes\n", program->key().hex().c_str(),
                    program->cubin().size());

        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("GPU part skipped: %s\n", reason.c_str());
            return 0;
        }
        kiln::ElementwiseKernel axpy("T x, T y, T a", "T z", "z = a * x + y", "client_axpy");
        std::vector<float> xs(1000), ys(1000);
        for (std::size_t i = 0; i < xs.size(); ++i) {
            xs[i] = static_cast<float>(i);
            ys[i] = 1.0f;
        }
        kiln::Array z = axpy(kiln::from_host(xs), kiln::from_host(ys), 2.0f);
        std::vector<float> out = z.to_host<float>();
        for (std::size_t i = 0; i < out.size(); ++i) {
            if (out[i] != 2.0f * xs[i] + 1.0f) {
                std::fprintf(stderr, "wrong result at %zu: %g\n", i, static_cast<double>(out[i]));
                return 1;
            }
        }
        std::printf("GPU part passed: %zu elements on %s\n", out.size(),
                    kiln::Device::current().name().c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
