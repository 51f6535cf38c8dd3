// The NVRTC build identity: the ELF build-id reader over the real library, crafted files and
// damaged ones; the key and the readable version built from it; nothing written to the cache.

#include "compile/nvrtc_identity.hpp"
#include "compile/nvrtc_library.hpp"

#include "compiler_fixture.hpp"
#include "elf_files.hpp"
#include "kiln/compiler.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <dlfcn.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

using kiln::detail::elf_build_id;
using kiln::test::ElfBuilder;
using kiln::test::TempDir;
using kiln::test::write_file;

namespace {

// The NVRTC library this process uses, found as Kiln finds it.
std::string nvrtc_library() {
    Dl_info info{};
    if (!dladdr(kiln::detail::nvrtc_address(), &info) || !info.dli_fname) return {};
    return std::filesystem::canonical(info.dli_fname).string();
}

// Holds a zero byte, so a reader that stops at one would be caught.
const std::string
    kId("\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe\x00\x11\x22\x33", 20);
const std::string kIdHex = "0123456789abcdef1032547698badcfe00112233";
const std::string kAbiTag(16, '\x03');

std::string id_of_bytes(const TempDir& dir, const std::string& bytes) {
    write_file(dir / "elf", bytes);
    return elf_build_id(dir / "elf");
}

// A compile over a cache directory of its own.
class NvrtcVersionCompile : public kiln::test::CompilerTest {};

bool is_hex_id(const std::string& id) {
    static const std::regex hex("([0-9a-f]{2}){1,64}");
    return std::regex_match(id, hex);
}

} // namespace

TEST(NvrtcVersion, FindsTheBannerAndSkipsThePrintfTemplate) {
    using namespace std::string_literals;
    const std::string blob = "junk\0Cuda compilation tools, release %d.%d, V%s\0"s +
                             "more\0Cuda compilation tools, release 13.0, V13.0.88\0tail"s;
    EXPECT_EQ(kiln::detail::find_version_banner(blob.data(), blob.size()), "13.0.88");
}

TEST(NvrtcVersion, AbsentBannerGivesNothing) {
    const std::string blob = "no version here, release 13.0";
    EXPECT_EQ(kiln::detail::find_version_banner(blob.data(), blob.size()), "");
}

TEST(NvrtcVersion, ReadsTheBuildIdOfTheNvrtcLibraryAsReadelfDoes) {
    const std::string library = nvrtc_library();
    ASSERT_FALSE(library.empty());
    const auto readelf = kiln::test::run_command("readelf -n '" + library + "'");
    if (readelf.status != 0) GTEST_SKIP() << "readelf is not available: " << readelf.err;
    std::smatch match;
    ASSERT_TRUE(std::regex_search(readelf.out, match, std::regex("Build ID: ([0-9a-f]+)")))
        << readelf.out;
    EXPECT_EQ(elf_build_id(library), match[1].str());
}

TEST(NvrtcVersion, ReadsTheLoadedLibrarysBuildIdFromMemoryAsFromItsFile) {
    const std::string from_file = elf_build_id(nvrtc_library());
    ASSERT_TRUE(is_hex_id(from_file)) << from_file;
    EXPECT_EQ(kiln::detail::loaded_build_id(kiln::detail::nvrtc_address()), from_file);
    // An address no loaded object holds (the heap) has no build id.
    const auto heap = std::make_unique<int>(0);
    EXPECT_EQ(kiln::detail::loaded_build_id(heap.get()), "");
}

TEST(NvrtcVersion, KeyAndReadableVersionNameTheBuild) {
    int major = 0, minor = 0;
    ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
    const std::string short_version = std::to_string(major) + "." + std::to_string(minor);
    const std::string id = elf_build_id(nvrtc_library());
    ASSERT_TRUE(is_hex_id(id)) << id;
    EXPECT_EQ(kiln::detail::nvrtc_full_version(), short_version + "+build." + id);
    EXPECT_EQ(kiln::nvrtc_version(), short_version + " (build " + id.substr(0, 8) + ")");
}

TEST(NvrtcVersion, FindsTheBuildIdInEitherClassAndByteOrder) {
    TempDir dir;
    for (bool is64 : {true, false}) {
        for (bool little : {true, false}) {
            const ElfBuilder elf(is64, little);
            const std::string notes = elf.note("GNU", 1, kAbiTag) + elf.note("GNU", 3, kId);
            EXPECT_EQ(id_of_bytes(dir, elf.file({notes})), kIdHex)
                << "ELF" << (is64 ? 64 : 32) << (little ? " LSB" : " MSB");
            EXPECT_EQ(id_of_bytes(dir, elf.file({elf.note("GNU", 1, kAbiTag), notes}, true)),
                      kIdHex)
                << "sections, ELF" << (is64 ? 64 : 32) << (little ? " LSB" : " MSB");
        }
    }
}

TEST(NvrtcVersion, AnElfWithoutTheNoteHasNoBuildId) {
    TempDir dir;
    const ElfBuilder elf(true, true);
    EXPECT_EQ(id_of_bytes(dir, elf.file({})), "");
    EXPECT_EQ(id_of_bytes(dir, elf.file({elf.note("GNU", 1, kAbiTag)})), "");
    EXPECT_EQ(id_of_bytes(dir, elf.file({elf.note("XYZ", 3, kId)})), "") << "another owner";
    EXPECT_EQ(id_of_bytes(dir, elf.file({elf.note("GNU", 3, "")})), "") << "an empty id";
}

TEST(NvrtcVersion, ATruncatedElfHasNoBuildId) {
    TempDir dir;
    const ElfBuilder elf(true, true);
    const std::string whole = elf.file({elf.note("GNU", 1, kAbiTag) + elf.note("GNU", 3, kId)});
    ASSERT_EQ(id_of_bytes(dir, whole), kIdHex);
    for (std::size_t size = 0; size < whole.size(); ++size)
        EXPECT_EQ(id_of_bytes(dir, whole.substr(0, size)), "") << size << " bytes";
}

TEST(NvrtcVersion, PrefixesOfTheRealLibraryGiveTheIdOrNothing) {
    const std::string id = elf_build_id(nvrtc_library());
    ASSERT_FALSE(id.empty());
    // The first page only (the library is about 100 MB).
    std::string head(4096, '\0');
    std::ifstream(nvrtc_library(), std::ios::binary).read(head.data(), 4096);
    ASSERT_EQ(head.substr(0, 4), "\x7f"
                                 "ELF");
    TempDir dir;
    for (std::size_t size = 0; size < head.size(); size += 7) {
        const std::string found = id_of_bytes(dir, head.substr(0, size));
        EXPECT_TRUE(found.empty() || found == id) << size << " bytes: " << found;
        if (size < 64) {
            EXPECT_EQ(found, "") << size << " bytes";
        }
    }
    EXPECT_EQ(id_of_bytes(dir, head), id) << "the note is in the first page";
}

TEST(NvrtcVersion, DamagedElfFilesGiveAnIdOrNothingWithoutCrashing) {
    TempDir dir;
    const ElfBuilder elf(true, true);
    const std::string whole = elf.file({elf.note("GNU", 1, kAbiTag) + elf.note("GNU", 3, kId)});
    std::mt19937 random(7);
    for (int round = 0; round < 500; ++round) {
        std::string damaged = whole;
        const int changes = 1 + round % 4;
        for (int i = 0; i < changes; ++i) {
            const std::size_t at = random() % damaged.size();
            const unsigned choice = random() % 3;
            damaged[at] = choice == 0 ? '\xff' : choice == 1 ? '\0' : static_cast<char>(random());
        }
        const std::string found = id_of_bytes(dir, damaged);
        EXPECT_TRUE(found.empty() || is_hex_id(found)) << "round " << round << ": " << found;
    }
}

TEST(NvrtcVersion, FilesThatAreNotElfHaveNoBuildId) {
    TempDir dir;
    EXPECT_EQ(id_of_bytes(dir, ""), "");
    EXPECT_EQ(id_of_bytes(dir, "\x7f"
                               "ELF"),
              "");
    EXPECT_EQ(id_of_bytes(dir, std::string(8192, 'x')), "");
    EXPECT_EQ(elf_build_id(dir / "missing"), "");
    EXPECT_EQ(elf_build_id(dir.path()), "") << "a directory";
}

TEST_F(NvrtcVersionCompile, WritesNoNvrtcVersionFileInTheCache) {
    m_compiler->compile(kiln::test::kAddSource, for_arch());
    ASSERT_EQ(m_store->local().stats().stores, 1u);
    for (const auto& file : std::filesystem::recursive_directory_iterator(m_dir.path()))
        EXPECT_NE(file.path().filename().string().rfind("nvrtc-version", 0), 0u) << file.path();
}

TEST(ProgramIdentity, IsTheMainExecutablesBuildIdAsItsFileHasIt) {
    // The read-ahead list of a program is filed under this: the same build, the same list.
    const std::string id = elf_build_id("/proc/self/exe");
    ASSERT_FALSE(id.empty()) << "the test executable was linked without a build id";
    EXPECT_EQ(kiln::detail::program_identity(), "build-id:" + id);
}
