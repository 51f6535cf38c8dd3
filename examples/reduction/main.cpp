// ReductionKernel: CuPy's reductions over kiln::Array. You give a map expression per element, a
// reduce expression over two partial results a and b, a post-map on the result and an identity;
// Kiln picks the algorithm for each call's axes and layout. Also the ready reductions (kiln::sum,
// kiln::max...) with NumPy's dtypes. Partial results meet in a fixed order, so a run repeats bit
// for bit. Exits 0 when the results match the host, 1 when they do not, 77 without a usable GPU.
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
            std::printf("reduction: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        // The Euclidean norm: square each element, add partial results, take the root at the end.
        kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                     "example_l2norm");
        const std::int64_t rows = 300, cols = 5000;
        std::vector<float> x(rows * cols);
        for (std::size_t i = 0; i < x.size(); ++i)
            x[i] = static_cast<float>(static_cast<int>((i * 2654435761U) % 2001U) - 1000) / 1000;
        kiln::Array dx = kiln::from_host(x, {rows, cols});

        kiln::ReduceCall by_row;
        by_row.axis = {1};                        // also keepdims, a stream, a device
        kiln::Array norms = l2norm(by_row, dx);   // over axis 1: one norm per row
        kiln::Array total = kiln::sum(dx);        // every axis: a 0-d array
        kiln::Array largest = kiln::max(dx, {0}); // per column, shape (5000,)

        const std::vector<float> got = norms.to_host<float>(), got_max = largest.to_host<float>();
        double worst = 0, sum = 0;
        for (std::int64_t r = 0; r < rows; ++r) {
            double squares = 0; // the host, in double
            for (std::int64_t c = 0; c < cols; ++c)
                squares += double(x[r * cols + c]) * x[r * cols + c];
            worst = std::fmax(worst, std::fabs(got[r] - std::sqrt(squares)) / std::sqrt(squares));
        }
        bool max_ok = true;
        for (std::int64_t c = 0; c < cols; ++c) {
            float m = x[c];
            for (std::int64_t r = 0; r < rows; ++r) {
                m = std::fmax(m, x[r * cols + c]);
                sum += x[r * cols + c];
            }
            max_ok = max_ok && got_max[c] == m; // a maximum is exact
        }
        const double got_sum = total.to_host<float>()[0];
        if (worst > 1e-5 || !max_ok || std::fabs(got_sum - sum) > 1e-5 * rows * cols) {
            std::fprintf(stderr, "reduction: wrong (norm error %g, max %s, sum %g for %g)\n", worst,
                         max_ok ? "right" : "wrong", got_sum, sum);
            return 1;
        }
        std::printf("reduction: %lld row norms, %lld column maxima and a sum checked\n",
                    static_cast<long long>(rows), static_cast<long long>(cols));
        return 0;
    } catch (const std::exception& e) { // a CompileError names the expression at fault
        std::fprintf(stderr, "reduction: %s\n", e.what());
        return 1;
    }
}
