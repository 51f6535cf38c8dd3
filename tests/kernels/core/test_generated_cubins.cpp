// What the generated kernels' cubins hold, compiled by NVRTC on the CPU: no module-scope variables.
// A cubin with device globals (NVRTC emits one for every namespace-scope or static constexpr
// variable its headers define, used or not) costs the driver an allocation and a copy when it
// loads the module: about three times a plain kernel's load on the H100/H200. The first call of a
// generated kernel from the disk cache is mostly that load.

#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;

namespace {

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 32;

Array fake(const kiln::Dims& shape, DType dtype) {
    static CUdeviceptr next = kBase;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

// The names of the cubin's variables; fails the test when the cubin cannot be read.
std::vector<std::string> variables(const kiln::Program& program) {
    const auto names = kiln::cache::cubin_variable_names(program.cubin());
    EXPECT_TRUE(names.has_value()) << "unreadable cubin";
    return names.value_or(std::vector<std::string>{"(unreadable)"});
}

// Every kernel of the cubin has parameter sizes the module load can read from its .nv.info
// records: without them, the load asks the driver for each until it refuses (tens of microseconds
// of a first call).
void expect_parameter_sizes(const kiln::Program& program) {
    const auto kernels = kiln::cache::cubin_kernel_names(program.cubin());
    ASSERT_TRUE(kernels.has_value()) << "unreadable cubin";
    ASSERT_FALSE(kernels->empty());
    for (const std::string& kernel : *kernels)
        EXPECT_TRUE(kiln::cache::cubin_parameter_sizes(program.cubin(), kernel).has_value())
            << kernel;
}

TEST(GeneratedCubins, ElementwiseKernelsHaveNoModuleVariables) {
    struct Case {
        const char* in;
        const char* out;
        const char* operation;
        DType dtype;
    };
    // The prelude's constants and traits, the index object, 16-bit and complex types.
    const Case cases[] = {
        {"T x, T y", "T z", "z = (x - y) * (x - y)", DType::float32},
        {"T x", "T y", "y = x * M_PI + M_SQRT2 + kiln::numbers::e_v<T>", DType::float64},
        {"T x", "T y",
         "y = cupy::type_traits::is_floating_point<T>::value ? x : T(_ind.ndim + _ind.size())",
         DType::int64},
        {"T x", "T y", "y = x + x", DType::float16},
        {"T x", "T y", "y = x * x", DType::complex64},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.operation);
        const kiln::ElementwiseKernel kernel(c.in, c.out, c.operation, "no_globals");
        // An Arg refers to its Array: the arrays live here.
        const int inputs = std::string(c.in).find(',') == std::string::npos ? 1 : 2;
        std::vector<Array> arrays;
        arrays.reserve(static_cast<std::size_t>(inputs) + 1);
        for (int i = 0; i < inputs + 1; ++i)
            arrays.push_back(fake({64, 33}, c.dtype));
        const std::vector<Arg> args(arrays.begin(), arrays.end());
        const auto program = kernel.compile_for(args.data(), args.size(), {}, "sm_90");
        EXPECT_EQ(variables(*program), std::vector<std::string>{});
        expect_parameter_sizes(*program);
    }
}

TEST(GeneratedCubins, ReductionKernelsHaveNoModuleVariables) {
    const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                       "l2norm");
    const kiln::ReductionKernel scaled_sum("T x", "T y", "x * T(M_PI)", "a + b", "y = a", "0",
                                           "scaled_sum");
    for (const DType dtype : {DType::float32, DType::float64, DType::float16}) {
        SCOPED_TRACE(kiln::name(dtype));
        for (const kiln::ReductionKernel* kernel : {&l2norm, &scaled_sum})
            for (const int axis : {0, 1}) { // columns (outer layout) and rows (group layout)
                const Array x = fake({512, 256}, dtype);
                const Arg args[] = {x};
                const auto program = kernel->compile_for(args, 1, kiln::ReduceCall{axis}, "sm_90");
                EXPECT_EQ(variables(*program), std::vector<std::string>{});
                expect_parameter_sizes(*program);
            }
    }
}

} // namespace
