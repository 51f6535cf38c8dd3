// The parameter sizes a module load takes from a cubin's records (cache::cubin_parameter_sizes)
// are the driver's: each kernel loaded from its program (the records read) and from the bare image
// (the driver asked, cuFuncGetParamInfo) gives the same, for raw kernels with every kind of
// parameter and for the kernels the front ends generate.

#include "gpu.hpp"

#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

void expect_sizes_the_drivers(const std::shared_ptr<const kiln::Program>& program,
                              const std::vector<std::string>& kernels) {
    const auto from_program =
        kiln::Module::load(program, kiln::CompileOptions::for_arch(program->arch()));
    const auto from_image = kiln::Module::load(program->cubin(), "the bare image");
    for (const std::string& kernel : kernels) {
        SCOPED_TRACE(kernel);
        const auto parsed = kiln::cache::cubin_parameter_sizes(program->cubin(), kernel);
        ASSERT_TRUE(parsed.has_value());
        EXPECT_EQ(from_program->function(kernel).parameter_sizes(), *parsed);
        EXPECT_EQ(from_image->function(kernel).parameter_sizes(), *parsed);
    }
}

TEST(CubinParametersGpu, RawKernelsParameterSizesAreTheDrivers) {
    KILN_REQUIRE_GPU();
    const char* const source = R"(
struct Pair { char c; double d; };
struct Wide { float v[33]; };
extern "C" __global__ void scalars(char c, short s, int i, long long l, float f, double d, int* o) {
    o[0] = c + s + i + int(l) + int(f) + int(d);
}
extern "C" __global__ void structs(Pair p, const __grid_constant__ Wide w, char2 c2, float4 f4,
                                   double* out) {
    out[0] = p.c + p.d + w.v[32] + c2.y + f4.w;
}
extern "C" __global__ void nothing() {}
template <class T> __global__ void axpy(T a, const T* x, T* y, unsigned n) { if (n) y[0] += a * x[0]; }
)";
    kiln::CompileOptions options = kiln::CompileOptions::for_arch(kiln::Device::current().arch());
    options.name_expressions = {"axpy<float>", "axpy<double>"};
    const auto program = kiln::compile(source, options);
    expect_sizes_the_drivers(program, {"scalars", "structs", "nothing",
                                       *program->lowered_name("axpy<float>"),
                                       *program->lowered_name("axpy<double>")});
}

TEST(CubinParametersGpu, GeneratedKernelsParameterSizesAreTheDrivers) {
    KILN_REQUIRE_GPU();
    const std::string arch = kiln::Device::current().arch();
    const kiln::Array x = kiln::empty({64, 32}, kiln::DType::float32);
    const kiln::Array y = kiln::empty({64, 32}, kiln::DType::float32);
    const kiln::ElementwiseKernel fma("T x, T y, T b", "T z", "z = x * y + b", "sizes_fma");
    const kiln::Arg fma_args[] = {x, y, 2.0f};
    expect_sizes_the_drivers(fma.compile_for(fma_args, 3, {}, arch), {"sizes_fma"});
    const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                       "sizes_l2norm");
    const kiln::Arg l2_args[] = {x};
    for (const int axis : {0, 1})
        expect_sizes_the_drivers(l2norm.compile_for(l2_args, 1, kiln::ReduceCall{axis}, arch),
                                 {"sizes_l2norm"});
}

} // namespace
