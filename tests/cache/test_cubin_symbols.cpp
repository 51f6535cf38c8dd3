// Kernel names from a cubin's ELF symbol table (kiln/cache/cubin_symbols.hpp), as `kiln cache ls`
// shows them: against a cubin built here by the ELF64 layout, and against damaged ones.

#include "kiln/cache/cubin_symbols.hpp"

#include "kiln/cache/store.hpp"

#include "cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using kiln::cache::cubin_kernel_names;

namespace {

void put(std::string& bytes, std::size_t offset, std::uint64_t value, int size) {
    for (int i = 0; i < size; ++i)
        bytes[offset + static_cast<std::size_t>(i)] = static_cast<char>(value >> (8 * i));
}

struct Symbol {
    std::string name;
    unsigned info;  // binding << 4 | type
    unsigned other; // 0x10: a CUDA entry
};

// A minimal ELF64 little-endian file as NVRTC lays out the parts read here: sections
// [0] null, [1] .strtab, [2] .symtab (linked to 1); a null symbol first.
std::string make_elf(const std::vector<Symbol>& symbols) {
    std::string strings(1, '\0');
    std::string table(24, '\0');
    for (const auto& symbol : symbols) {
        std::string entry(24, '\0');
        put(entry, 0, strings.size(), 4);
        put(entry, 4, symbol.info, 1);
        put(entry, 5, symbol.other, 1);
        put(entry, 6, 1, 2);
        table += entry;
        strings += symbol.name + '\0';
    }
    std::string elf(64, '\0');
    elf.replace(0, 4,
                "\x7f"
                "ELF");
    elf[4] = 2; // 64-bit
    elf[5] = 1; // little-endian
    elf[6] = 1;
    const std::size_t strings_at = elf.size();
    elf += strings;
    while (elf.size() % 8)
        elf.push_back('\0');
    const std::size_t table_at = elf.size();
    elf += table;
    const std::size_t sections_at = elf.size();
    elf += std::string(std::size_t{3} * 64, '\0');
    put(elf, 0x28, sections_at, 8);
    put(elf, 0x3a, 64, 2);
    put(elf, 0x3c, 3, 2);
    put(elf, sections_at + 64 + 4, 3, 4); // SHT_STRTAB
    put(elf, sections_at + 64 + 24, strings_at, 8);
    put(elf, sections_at + 64 + 32, strings.size(), 8);
    put(elf, sections_at + 128 + 4, 2, 4); // SHT_SYMTAB
    put(elf, sections_at + 128 + 24, table_at, 8);
    put(elf, sections_at + 128 + 32, table.size(), 8);
    put(elf, sections_at + 128 + 40, 1, 4);
    put(elf, sections_at + 128 + 56, 24, 8);
    return elf;
}

// What NVRTC wrote for `extern "C" k`, the template instance fill<3> (a weak symbol) and a
// __noinline__ device function (a FUNC that is no entry), with a section symbol and an object.
std::string sample_cubin() {
    return make_elf({{"", 0x03, 0},
                     {"_Z4fillILi3EEvPi", 0x22, 0x10},
                     {".nv.reservedSmem.offset0", 0x21, 0},
                     {"_Z5twicef", 0x12, 0},
                     {"k", 0x12, 0x10}});
}

} // namespace

TEST(CubinSymbols, NamesEveryKernelAndNothingElse) {
    const auto names = cubin_kernel_names(sample_cubin());
    ASSERT_TRUE(names);
    EXPECT_EQ(*names, (std::vector<std::string>{"_Z4fillILi3EEvPi", "k"}));
    const auto none = cubin_kernel_names(make_elf({{"_Z5twicef", 0x12, 0}}));
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TEST(CubinSymbols, NamesEveryVariableAndNothingElse) {
    // __constant__ float table[16] and __device__ int ns::nested (local objects), a kernel, a
    // device function and the toolchain's reserved shared memory (a weak object).
    const auto elf = make_elf({{"table", 0x01, 0},
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
    std::string big_endian = sample_cubin();
    big_endian[5] = 2;
    EXPECT_FALSE(cubin_kernel_names(big_endian));
}

TEST(CubinSymbols, OffsetsAndSizesOutsideTheFileAreRefused) {
    const std::string good = sample_cubin();
    const std::size_t sections = good.size() - std::size_t{3} * 64;
    auto with = [&](std::size_t offset, std::uint64_t value, int size) {
        std::string bytes = good;
        put(bytes, offset, value, size);
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

TEST(CubinSymbols, ListNamesTheKernelsOfEachVersion1Entry) {
    // Version-1 entries record no kernel names: the listing reads them from the cubin.
    kiln::test::TempDir dir;
    kiln::cache::Store store(kiln::test::config_for(dir.path()));
    auto entry = kiln::test::make_entry(kiln::test::key_of("cubin"));
    entry.format_version = 1;
    entry.payload = sample_cubin();
    entry.lowered_names = {{"fill<3>", "_Z4fillILi3EEvPi"}}; // k has no name expression
    ASSERT_TRUE(store.store(entry));
    auto other = kiln::test::make_entry(kiln::test::key_of("not an ELF file"));
    other.format_version = 1;
    ASSERT_TRUE(store.store(other));
    for (const auto& info : store.local().list()) {
        if (info.key == entry.key) {
            EXPECT_EQ(info.kernel_count, 2u);
            EXPECT_EQ(info.kernel_names, (std::vector<std::string>{"_Z4fillILi3EEvPi", "k"}));
        } else {
            // No symbol table to read: the lowered names stand in.
            EXPECT_EQ(info.kernel_names, (std::vector<std::string>{"_Z3addIfEvPT_", "_Z5scalePf"}));
        }
    }
}

TEST(CubinSymbols, ListShowsTheNamesAVersion2EntryRecorded) {
    // Recorded at compile time, so the listing need not parse the payload (here no ELF file).
    kiln::test::TempDir dir;
    kiln::cache::Store store(kiln::test::config_for(dir.path()));
    auto entry = kiln::test::make_entry(kiln::test::key_of("recorded"));
    entry.kernel_names = {"_Z4fillILi3EEvPi", "k"};
    ASSERT_TRUE(store.store(entry));
    const auto infos = store.local().list();
    ASSERT_EQ(infos.size(), 1u);
    EXPECT_EQ(infos[0].kernel_names, entry.kernel_names);
    EXPECT_EQ(infos[0].kernel_count, 2u);
    EXPECT_EQ(infos[0].format_version, 2u);
    EXPECT_FALSE(infos[0].has_recipe);
}
