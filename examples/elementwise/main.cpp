// ElementwiseKernel: CuPy's elementwise kernels over kiln::Array. You write the operation on one
// element; Kiln generates the loop for each call's dtypes and layout, broadcasts the inputs and
// allocates the output. Also the ready operations (kiln::sqrt, kiln::add...), NumPy's dtypes.
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
            std::printf("elementwise: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        // "T" is a type placeholder: the call binds it to its arrays' dtype (float32 here), and
        // the scalar a is cast to it. Later calls with the same dtypes and layout compile nothing.
        kiln::ElementwiseKernel axpb("T x, T y, T a", "T z", "z = a * x + y", "example_axpb");
        const std::int64_t rows = 64, cols = 1000;
        std::vector<float> x(rows * cols), bias(cols);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = static_cast<float>((i * 2654435761U) % 1000U) / 100.0f;
        for (std::size_t c = 0; c < bias.size(); ++c)
            bias[c] = static_cast<float>(c) * 0.5f;

        kiln::Array dx = kiln::from_host(x, {rows, cols});
        kiln::Array dbias = kiln::from_host(bias);     // shape (1000,): broadcast to each row
        kiln::Array z = axpb(dx, dbias, 3.0f);         // float32, shape (64, 1000)
        kiln::Array r = kiln::sqrt(kiln::add(z, 1.0)); // ready operations: float32 still

        const std::vector<float> got_z = z.to_host<float>(), got_r = r.to_host<float>();
        double worst = 0;
        for (std::size_t i = 0; i < x.size(); ++i) {
            const double want = 3.0 * x[i] + bias[i % bias.size()]; // the host, in double
            worst = std::fmax(worst, std::fabs(got_z[i] - want) / (1.0 + std::fabs(want)));
            worst = std::fmax(worst,
                              std::fabs(got_r[i] - std::sqrt(want + 1.0)) / std::sqrt(want + 1.0));
        }
        if (z.shape() != kiln::Dims({rows, cols}) || r.dtype() != kiln::DType::float32 ||
            worst > 1e-5) {
            std::fprintf(stderr, "elementwise: wrong result (largest error %g)\n", worst);
            return 1;
        }
        std::printf("elementwise: %lld elements checked, largest relative error %.2g\n",
                    static_cast<long long>(z.size()), worst);
        return 0;
    } catch (const std::exception& e) { // a SpecError shows the spec with a caret at the fault
        std::fprintf(stderr, "elementwise: %s\n", e.what());
        return 1;
    }
}
