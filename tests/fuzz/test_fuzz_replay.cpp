// The fuzz harnesses on their seed corpora and on every input that once crashed them, without
// libFuzzer: each file must run through its harness without an escaping exception (a sanitizer
// build of the tests also checks memory and undefined behaviour on them).

#include "entry_harness.hpp"
#include "spec_harness.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using Harness = void (*)(const std::uint8_t*, std::size_t);

std::vector<fs::path> files_in(const fs::path& dir) {
    std::vector<fs::path> files;
    if (!fs::is_directory(dir)) return files;
    for (const auto& item : fs::directory_iterator(dir))
        if (item.is_regular_file() && item.path().filename() != "README.md")
            files.push_back(item.path());
    std::sort(files.begin(), files.end());
    return files;
}

void replay(const fs::path& file, Harness harness) {
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_TRUE(in.good() || in.eof()) << file;
    try {
        harness(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
        ADD_FAILURE() << file << ": " << e.what();
    }
}

// Returns how many files were replayed.
std::size_t replay_dir(const fs::path& dir, Harness harness) {
    const auto files = files_in(dir);
    for (const auto& file : files) {
        SCOPED_TRACE(file.string());
        replay(file, harness);
    }
    return files.size();
}

const fs::path kCorpus = KILN_FUZZ_CORPUS_DIR;
const fs::path kRegressions = KILN_FUZZ_REGRESSIONS_DIR;

} // namespace

TEST(FuzzReplay, ParamSpecSeedCorpusRuns) {
    EXPECT_GT(replay_dir(kCorpus / "fuzz_param_spec", kiln::fuzz::run_spec_input), 0u);
}

TEST(FuzzReplay, CacheEntrySeedCorpusRuns) {
    EXPECT_GT(replay_dir(kCorpus / "fuzz_cache_entry", kiln::fuzz::run_entry_input), 0u);
}

TEST(FuzzReplay, ParamSpecCrashersStayFixed) {
    replay_dir(kRegressions / "fuzz_param_spec", kiln::fuzz::run_spec_input);
}

TEST(FuzzReplay, CacheEntryCrashersStayFixed) {
    replay_dir(kRegressions / "fuzz_cache_entry", kiln::fuzz::run_entry_input);
}

TEST(FuzzReplay, EmptyAndTinyInputsRun) {
    const std::uint8_t bytes[] = {'\n', 0, 0xff};
    for (std::size_t size = 0; size <= sizeof bytes; ++size) {
        EXPECT_NO_THROW(kiln::fuzz::run_spec_input(bytes, size));
        EXPECT_NO_THROW(kiln::fuzz::run_entry_input(bytes, size));
    }
}
