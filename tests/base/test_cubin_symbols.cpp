// The kernels and variables of a cubin's ELF symbol table and its kernels' parameter sizes
// (kiln/cache/cubin_symbols.hpp, read with base's ELF reader): against a cubin NVRTC compiles here
// (no GPU needed), one built here by the ELF64 layout, and damaged ones. `kiln cache ls` over
// version-1 entries: tests/cache/test_maintenance.cpp.

#include "kiln/cache/cubin_symbols.hpp"

#include "elf_files.hpp"
#include "kiln/compiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using kiln::cache::cubin_kernel_names;
using kiln::test::sample_cubin;
using kiln::test::symbol_elf;

TEST(CubinSymbols, ReadsWhatNvrtcWrote) {
    const char* const source = R"(
__constant__ float table[16];
namespace ns { __device__ int nested; }
__device__ __noinline__ float twice(float x) { return 2 * x; }
extern "C" __global__ void k(float* out, int n) { out[n] = twice(table[n]) + ns::nested; }
template <class T> __global__ void fill(T* out, T value, char c) { out[c] = value; }
)";
    kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
    options.name_expressions = {"fill<double>"};
    options.use_disk_cache = false;
    const auto program = kiln::compile(source, options);
    const std::string& cubin = program->cubin();
    const auto fill = program->lowered_name("fill<double>");
    ASSERT_TRUE(fill);

    auto kernels = cubin_kernel_names(cubin);
    ASSERT_TRUE(kernels);
    std::sort(kernels->begin(), kernels->end());
    EXPECT_EQ(*kernels, (std::vector<std::string>{*fill, "k"}));
    auto variables = kiln::cache::cubin_variable_names(cubin);
    ASSERT_TRUE(variables);
    std::sort(variables->begin(), variables->end());
    EXPECT_EQ(*variables, (std::vector<std::string>{"_ZN2ns6nestedE", "table"}));
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, "k"), (std::vector<std::size_t>{8, 4}));
    EXPECT_EQ(kiln::cache::cubin_parameter_sizes(cubin, *fill),
              (std::vector<std::size_t>{8, 8, 1}));
    EXPECT_FALSE(kiln::cache::cubin_parameter_sizes(cubin, "_Z5twicef")) << "no kernel";
}

TEST(CubinSymbols, NamesEveryKernelAndNothingElse) {
    const auto names = cubin_kernel_names(sample_cubin());
    ASSERT_TRUE(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"_Z4fillILi3EEvPi", "k"}));
    const auto none = cubin_kernel_names(symbol_elf({{"_Z5twicef", 0x12, 0}}));
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(CubinSymbols, NamesEveryVariableAndNothingElse) {
    // __constant__ float table[16] and __device__ int ns::nested (local objects), a kernel, a
    // device function and the toolchain's reserved shared memory (a weak object).
    const auto elf = symbol_elf({{"table", 0x01, 0},
                                 {"k", 0x12, 0x10},
                                 {".nv.reservedSmem.offset0", 0x21, 0},
                                 {"__nv_internal", 0x01, 0},
                                 {"_Z5twicef", 0x12, 0},
                                 {"_ZN2ns6nestedE", 0x01, 0}});
    const auto names = kiln::cache::cubin_variable_names(elf);
    ASSERT_TRUE(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"table", "_ZN2ns6nestedE"}));
    EXPECT_FALSE(kiln::cache::cubin_variable_names("not an ELF file"));
}

TEST(CubinSymbols, WhatIsNoElfFileHasNoNames) {
    for (const std::string& bytes : {std::string(),
                                     std::string("\x7f"
                                                 "ELF"),
                                     std::string(100, 'x'), sample_cubin().substr(0, 64)}) {
        EXPECT_FALSE(cubin_kernel_names(bytes)) << bytes.size();
    }
    // Readable ELF files, but no cubin: NVRTC writes 64-bit little-endian ones.
    std::string big_endian = sample_cubin();
    big_endian[5] = 2;
    EXPECT_FALSE(cubin_kernel_names(big_endian));
    std::string narrow = sample_cubin();
    narrow[4] = 1;
    EXPECT_FALSE(cubin_kernel_names(narrow));
    EXPECT_FALSE(kiln::cache::cubin_parameter_sizes(narrow, "k"));
}

TEST(CubinSymbols, OffsetsAndSizesOutsideTheFileAreRefused) {
    const std::string good = sample_cubin();
    const std::size_t sections = good.size() - std::size_t{3} * 64;
    auto with = [&](std::size_t offset, std::uint64_t value, int size) {
        std::string bytes = good;
        kiln::test::put_le(bytes, offset, value, size);
        return bytes;
    };
    EXPECT_FALSE(cubin_kernel_names(with(0x28, ~std::uint64_t{0} - 10, 8))); // section table
    EXPECT_FALSE(cubin_kernel_names(with(0x3c, 60000, 2)));                  // section count
    EXPECT_FALSE(cubin_kernel_names(with(sections + 128 + 32, ~std::uint64_t{0}, 8)));
    EXPECT_FALSE(cubin_kernel_names(with(sections + 128 + 24, good.size() - 8, 8)));
    EXPECT_FALSE(cubin_kernel_names(with(sections + 128 + 40, 7, 4))); // strings: no section
    EXPECT_FALSE(cubin_kernel_names(with(sections + 64 + 32, 1u << 30, 8)));
    EXPECT_FALSE(cubin_kernel_names(with(sections + 128 + 56, 0, 8))); // symbol size 0
    // A huge symbol size reads no symbol rather than wrapping around.
    const auto huge = cubin_kernel_names(with(sections + 128 + 56, ~std::uint64_t{0} / 2, 8));
    ASSERT_TRUE(huge);
    EXPECT_TRUE(huge->empty());
}

// Garbage never crashes the parser (the sanitizer builds check that no byte outside is read).
TEST(CubinSymbols, DamagedCubinsNeverCrash) {
    const std::string good = sample_cubin();
    std::mt19937 random(12345);
    for (int round = 0; round < 20000; ++round) {
        std::string bytes = good.substr(0, random() % (good.size() + 1));
        const int flips = 1 + static_cast<int>(random() % 4);
        for (int i = 0; i < flips && !bytes.empty(); ++i)
            bytes[random() % bytes.size()] = static_cast<char>(random());
        const auto names = cubin_kernel_names(bytes);
        if (!names) continue;
        for (const auto& name : *names) {
            EXPECT_LE(name.size(), bytes.size());
        }
    }
}
