// The memo of a generated kernel: a second kernel object (as in a fresh process) finds its cubin
// on disk without generating the source, and no memo (damaged, planted, a link, another Kiln or
// NVRTC build) can make it take another kernel. Nothing is launched: Array::wrap over made-up
// addresses, compile_for() for sm_90.

#include "core/specialization_memo.hpp"

#include "kiln/cache/memo_store.hpp"
#include "kiln/kiln.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

using kiln::Array;
using kiln::DType;
using kiln::ElementwiseKernel;
using kiln::ReduceCall;
using kiln::ReductionKernel;

namespace {

constexpr const char* kArch = "sm_90";

// The process's cache directory, set before anything opens the global store, removed at the end.
class CacheEnvironment : public ::testing::Environment {
  public:
    void SetUp() override {
        m_dir = std::make_unique<kiln::test::TempDir>();
        ::setenv("KILN_CACHE_DIR", (m_dir->path() / "cache").c_str(), 1);
        ::unsetenv("KILN_CACHE_SAVE_SOURCE");
        ::unsetenv("KILN_CACHE_DISABLE");
    }
    void TearDown() override { m_dir.reset(); }

  private:
    std::unique_ptr<kiln::test::TempDir> m_dir;
};
[[maybe_unused]] const auto* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new CacheEnvironment);

Array fake(const kiln::Dims& shape) {
    return Array::wrap(CUdeviceptr{1} << 32, shape, DType::float32);
}

std::uint64_t memo_hits() {
    return kiln::Compiler::global().statistics().memo_hits;
}
std::uint64_t compiles() {
    return kiln::Compiler::global().statistics().compiles;
}

// A fresh kernel object each time, as a fresh process makes it.
std::shared_ptr<const kiln::Program> squared_diff(const std::string& name = "memo_squared_diff") {
    const Array x = fake({4096});
    const kiln::Arg args[] = {x, x};
    ElementwiseKernel k("T x, T y", "T z", "z = (x - y) * (x - y)", name);
    return k.compile_for(args, 2, {}, kArch);
}

std::shared_ptr<const kiln::Program> row_norm() {
    const Array x = fake({64, 256});
    const kiln::Arg args[] = {x};
    ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "memo_row_norm");
    return k.compile_for(args, 1, ReduceCall{1}, kArch);
}

// The memo files in the cache directory.
std::vector<std::filesystem::path> memo_files() {
    std::vector<std::filesystem::path> found;
    for (const auto& item :
         std::filesystem::recursive_directory_iterator(std::getenv("KILN_CACHE_DIR")))
        if (item.path().extension() == ".memo") found.push_back(item.path());
    return found;
}

// The memo file of squared_diff(): the one whose verified content names its kernel.
std::filesystem::path squared_diff_memo() {
    squared_diff();
    for (const auto& file : memo_files()) {
        const auto signature = kiln::cache::Key::from_hex(file.stem().string());
        const auto memo = signature
                              ? kiln::cache::decode_memo(kiln::test::read_file(file), *signature)
                              : std::nullopt;
        if (memo && memo->name == "memo_squared_diff") return file;
    }
    return {};
}

} // namespace

TEST(SpecializationMemo, ASecondKernelObjectFindsItsCubinWithoutGeneratingSource) {
    const auto first = squared_diff();
    ASSERT_FALSE(first->source().empty()); // the first one generated its source
    ASSERT_FALSE(squared_diff_memo().empty());
    // Another object in this process: the memo names the program this process holds.
    std::uint64_t hits = memo_hits(), compiled = compiles();
    EXPECT_EQ(squared_diff()->key(), first->key());
    EXPECT_EQ(memo_hits(), hits + 1);
    EXPECT_EQ(compiles(), compiled);
    // As in a fresh process: nothing in memory, the memo holds the cubin.
    kiln::Compiler::global().clear_memory();
    hits = memo_hits();
    const std::uint64_t disk = kiln::Compiler::global().statistics().disk_hits;
    const auto second = squared_diff();
    EXPECT_EQ(memo_hits(), hits + 1);
    EXPECT_EQ(kiln::Compiler::global().statistics().disk_hits, disk + 1);
    EXPECT_EQ(compiles(), compiled);
    EXPECT_TRUE(second->source().empty()); // nothing was generated
    EXPECT_EQ(second->key(), first->key());
    EXPECT_EQ(second->cubin(), first->cubin());
    EXPECT_EQ(second->origin(), kiln::ProgramOrigin::disk_cache);
}

// The memo holds the cubin: a fresh process's first call reads that one file, not the entry.
TEST(SpecializationMemo, AMemoHitReadsNoEntry) {
    const auto first = squared_diff();
    squared_diff(); // the memo is valid now
    const std::string hex = first->key().hex();
    const auto entry =
        std::filesystem::path(std::getenv("KILN_CACHE_DIR")) / hex.substr(0, 2) / (hex + ".kiln");
    ASSERT_TRUE(std::filesystem::remove(entry));
    kiln::Compiler::global().clear_memory();
    const std::uint64_t hits = memo_hits(), compiled = compiles();
    const auto second = squared_diff();
    EXPECT_EQ(memo_hits(), hits + 1);
    EXPECT_EQ(compiles(), compiled);
    EXPECT_EQ(second->cubin(), first->cubin());
    EXPECT_EQ(second->key(), first->key());
    EXPECT_FALSE(std::filesystem::exists(entry)); // nothing looked for it
}

TEST(SpecializationMemo, AReductionFindsItsCubinThroughItsMemo) {
    const auto first = row_norm();
    const std::uint64_t hits = memo_hits();
    const auto second = row_norm();
    EXPECT_EQ(memo_hits(), hits + 1);
    EXPECT_EQ(second->key(), first->key());
}

TEST(SpecializationMemo, ADamagedMemoIsAMissAndTheCallGetsItsKernel) {
    const auto right = squared_diff();
    const auto path = squared_diff_memo();
    std::string bytes = kiln::test::read_file(path);
    ASSERT_FALSE(bytes.empty());
    bytes[bytes.size() / 2] ^= 0x20;
    kiln::test::write_file(path, bytes);
    ::chmod(path.c_str(), 0600);
    const std::uint64_t hits = memo_hits();
    const auto program = squared_diff();
    EXPECT_EQ(memo_hits(), hits);
    EXPECT_EQ(program->key(), right->key());
    // The miss wrote the memo again: the next object hits.
    squared_diff();
    EXPECT_EQ(memo_hits(), hits + 1);
}

TEST(SpecializationMemo, APlantedMemoNamingAnotherKernelsEntryIsAMiss) {
    const auto right = squared_diff();
    const auto other = squared_diff("memo_other_kernel");
    ASSERT_NE(other->key(), right->key());
    const auto path = squared_diff_memo();
    const auto signature = kiln::cache::Key::from_hex(path.stem().string());
    ASSERT_TRUE(signature);
    // A well-formed memo that holds the other kernel's cubin under this kernel's name: the cubin
    // does not hold this kernel, so it is not taken.
    kiln::test::write_file(
        path,
        kiln::cache::encode_memo(*signature, {other->key(), "memo_squared_diff", other->cubin()}));
    ::chmod(path.c_str(), 0600);
    const std::uint64_t hits = memo_hits();
    const auto program = squared_diff();
    EXPECT_EQ(memo_hits(), hits);
    EXPECT_EQ(program->key(), right->key());
}

TEST(SpecializationMemo, ASymlinkedMemoIsAMiss) {
    const auto right = squared_diff();
    squared_diff(); // the memo is valid now
    const auto path = squared_diff_memo();
    const auto moved = path.parent_path() / "moved.bin";
    std::filesystem::rename(path, moved);
    std::filesystem::create_symlink(moved, path);
    const std::uint64_t hits = memo_hits();
    const auto program = squared_diff();
    EXPECT_EQ(memo_hits(), hits);
    EXPECT_EQ(program->key(), right->key());
    std::filesystem::remove(moved);
}

TEST(SpecializationMemo, AMemoFromAnotherKilnOrNvrtcBuildIsAMiss) {
    const auto right = squared_diff();
    squared_diff();
    // A copy: the identity it refers to is replaced below.
    const kiln::detail::MemoIdentity mine = // NOLINT(performance-unnecessary-copy-initialization)
        kiln::detail::memo_identity();
    ASSERT_FALSE(mine.kiln.empty()); // this build has a build id: memos are on

    std::uint64_t hits = memo_hits();
    kiln::detail::set_memo_identity_for_testing({mine.kiln + "-other", mine.nvrtc});
    EXPECT_EQ(squared_diff()->key(), right->key());
    EXPECT_EQ(memo_hits(), hits);

    kiln::detail::set_memo_identity_for_testing({mine.kiln, mine.nvrtc + "-other"});
    EXPECT_EQ(squared_diff()->key(), right->key());
    EXPECT_EQ(memo_hits(), hits);

    // No build identity: memos are off, nothing is written or read.
    kiln::detail::set_memo_identity_for_testing({"", mine.nvrtc});
    const auto files = memo_files().size();
    EXPECT_FALSE(squared_diff("memo_no_identity")->source().empty());
    EXPECT_EQ(memo_files().size(), files);

    kiln::detail::set_memo_identity_for_testing(mine);
    squared_diff();
    EXPECT_EQ(memo_hits(), hits + 1);
}

TEST(SpecializationMemo, TheLineinfoSettingIsPartOfTheSignature) {
    const auto with_lineinfo = squared_diff();
    squared_diff(); // the memo is valid now
    const std::uint64_t hits = memo_hits();
    ::setenv("KILN_LINEINFO", "0", 1);
    const auto without = squared_diff();
    ::unsetenv("KILN_LINEINFO");
    EXPECT_EQ(memo_hits(), hits); // not led to the entry compiled with -lineinfo
    EXPECT_NE(without->key(), with_lineinfo->key());
}
