// kiln::fuse: a generic lambda of array operations runs as one generated kernel instead of one
// kernel per operation (CuPy's cupy.fuse). The lambda is traced once per signature (dtypes, array
// or scalar, number of dimensions); later calls look the kernel up and launch it. A function whose
// reductions' results meet arrays again (softmax) becomes as few kernels as that allows: here,
// over C-contiguous rows, one kernel of a block per row.
// Exits 0 when the results match the host, 1 when they do not, 77 without a usable GPU.
#include <kiln/kiln.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main() {
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("fusion: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        // Elementwise work only: one elementwise kernel (tanh's GELU; literals are constants).
        auto gelu = kiln::fuse("example_gelu", [](auto x) {
            return 0.5 * x * (1.0 + kiln::tanh(0.7978845608 * (x + 0.044715 * x * x * x)));
        });
        // Elementwise work, one reduction, then work on its result: one reduction kernel. The
        // scalar eps is a kernel parameter, so a new value does not trace or compile again.
        auto rms = kiln::fuse("example_rms", [](auto x, auto eps) {
            return kiln::sqrt(kiln::mean(x * x, -1) + eps);
        });

        // Two reductions, their results used with the array: one kernel of a block per row.
        auto softmax = kiln::fuse("example_softmax", [](auto x) {
            auto e = kiln::exp(x - kiln::max(x, -1, {true}));
            return e / kiln::sum(e, -1, {true});
        });

        const std::int64_t rows = 128, cols = 768;
        std::vector<float> host(rows * cols);
        for (std::size_t i = 0; i < host.size(); ++i)
            host[i] = static_cast<float>(static_cast<int>((i * 2654435761U) % 801U) - 400) / 100;
        kiln::Array x = kiln::from_host(host, {rows, cols});
        const kiln::Array activated = gelu(x); // float32: 0.5 is a weak scalar, as in NumPy 2
        rms(x, 1e-3);
        const kiln::Array norms = rms(x, 1e-6); // shape (128,); the same kernel as for 1e-3
        const std::vector<float> g = activated.to_host<float>(), r = norms.to_host<float>(),
                                 p = kiln::Array(softmax(x)).to_host<float>();

        double worst = 0;
        for (std::int64_t row = 0; row < rows; ++row) {
            double squares = 0; // the host, in double
            for (std::int64_t c = 0; c < cols; ++c) {
                const double v = host[row * cols + c];
                const double want =
                    0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
                worst =
                    std::fmax(worst, std::fabs(g[row * cols + c] - want) / (1 + std::fabs(want)));
                squares += v * v;
            }
            const double want = std::sqrt(squares / cols + 1e-6);
            worst = std::fmax(worst, std::fabs(r[row] - want) / want);
            double most = -INFINITY, total = 0;
            for (std::int64_t c = 0; c < cols; ++c)
                most = std::fmax(most, host[row * cols + c]);
            for (std::int64_t c = 0; c < cols; ++c)
                total += std::exp(host[row * cols + c] - most);
            for (std::int64_t c = 0; c < cols; ++c) {
                const double soft = std::exp(host[row * cols + c] - most) / total;
                worst = std::fmax(worst, std::fabs(p[row * cols + c] - soft) / (1e-3 + soft));
            }
        }
        if (worst > 1e-5 || rms.traces() != 1) {
            std::fprintf(stderr, "fusion: wrong (largest error %g, %zu traces)\n", worst,
                         rms.traces());
            return 1;
        }
        std::printf("fusion: gelu, rms and softmax checked, largest relative error %.2g\n", worst);
        return 0;
    } catch (const std::exception& e) { // a FusionError says which operation cannot be fused
        std::fprintf(stderr, "fusion: %s\n", e.what());
        return 1;
    }
}
