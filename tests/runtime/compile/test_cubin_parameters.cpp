// The parameter sizes a module load reads from a cubin (kiln::cache::cubin_parameter_sizes), so
// that it need not ask the driver for each: against real cubins NVRTC compiles here (no GPU
// needed) for kernels of every shape of parameter list, and against damaged bytes
// (test_cubin_parameters_gpu.cpp: against what the driver says).

#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/compiler.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace {

const char* const kKernels = R"(
struct Big { float values[1000]; };
struct Small { char c; double d; };
extern "C" __global__ void none() {}
extern "C" __global__ void one(int n) { if (n == 7) asm("trap;"); }
extern "C" __global__ void padded(char c, double* out, short s, Small small) {
    out[0] = c + s + small.d;
}
extern "C" __global__ void big(Big b, float* out) { out[0] = b.values[999]; }
extern "C" __global__ void many(int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7,
                                int a8, int a9, int a10, int a11, int a12, int a13, int a14,
                                int a15, int a16, int a17, int a18, float* out) {
    out[0] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 +
             a15 + a16 + a17 + a18;
}
template <class T> __global__ void scale(T* x, T a, int n) { if (n) x[0] *= a; }
)";

std::shared_ptr<const kiln::Program> compiled() {
    kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
    options.name_expressions = {"scale<double>"};
    options.use_disk_cache = false;
    return kiln::compile(kKernels, options);
}

using Sizes = std::vector<std::size_t>;

TEST(CubinParameters, GivesEachKernelsParameterSizes) {
    const auto program = compiled();
    const std::string& cubin = program->cubin();
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, "none"), Sizes{});
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, "one"), Sizes{4});
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, "padded"), (Sizes{1, 8, 2, 16}));
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, "big"), (Sizes{4000, 8}));
    Sizes many(19, 4);
    many.push_back(8);
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, "many"), many);
    const auto lowered = program->lowered_name("scale<double>");
    ASSERT_TRUE(lowered);
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, *lowered), (Sizes{8, 8, 4}));
    // Unknown kernels, prefixes of names and what is no cubin have no sizes.
    EXPECT_FALSE(kiln::cache::cubin_parameter_sizes(cubin, "missing"));
    EXPECT_FALSE(kiln::cache::cubin_parameter_sizes(cubin, "on"));
    EXPECT_FALSE(kiln::cache::cubin_parameter_sizes("not an ELF file", "one"));
}

// Garbage never crashes the parser, and what it gives from damaged bytes stays small (the
// sanitizer builds check that no byte outside is read).
TEST(CubinParameters, DamagedCubinsNeverCrash) {
    const std::string good = compiled()->cubin();
    std::mt19937 random(2026);
    for (int round = 0; round < 5000; ++round) {
        std::string bytes = good.substr(0, random() % (good.size() + 1));
        const int flips = 1 + static_cast<int>(random() % 8);
        for (int i = 0; i < flips && !bytes.empty(); ++i)
            bytes[random() % bytes.size()] = static_cast<char>(random());
        for (const char* kernel : {"none", "padded", "many"}) {
            if (const auto sizes = kiln::cache::cubin_parameter_sizes(bytes, kernel)) {
                EXPECT_LE(sizes->size(), bytes.size());
            }
        }
    }
}

} // namespace
