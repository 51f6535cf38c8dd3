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

// Replays every input in @p dir; a folder that is missing or holds no input fails: a replay of
// nothing would pass whatever the harness does.
void replay_dir(const fs::path& dir, Harness harness) {
    const auto files = files_in(dir);
    if (files.empty()) ADD_FAILURE() << dir << " is missing or holds no input: nothing replayed";
    for (const auto& file : files) {
        SCOPED_TRACE(file.string());
        replay(file, harness);
    }
}

const fs::path kCorpus = KILN_FUZZ_CORPUS_DIR;
// One folder per fuzzer that has found a crasher, named after the fuzzer (fuzz/README.md).
const fs::path kRegressions = KILN_FUZZ_REGRESSIONS_DIR;

struct Fuzzer {
    const char* name;
    Harness harness;
};
const Fuzzer kFuzzers[] = {
    {"fuzz_param_spec", kiln::fuzz::run_spec_input},
    {"fuzz_cache_entry", kiln::fuzz::run_entry_input},
};

const Fuzzer* fuzzer_named(const std::string& name) {
    for (const Fuzzer& fuzzer : kFuzzers)
        if (name == fuzzer.name) return &fuzzer;
    return nullptr;
}

std::vector<fs::path> regression_folders() {
    std::vector<fs::path> folders;
    if (!fs::is_directory(kRegressions)) return folders;
    for (const auto& item : fs::directory_iterator(kRegressions))
        if (item.is_directory()) folders.push_back(item.path());
    std::sort(folders.begin(), folders.end());
    return folders;
}

} // namespace

TEST(FuzzReplay, ParamSpecSeedCorpusRuns) {
    replay_dir(kCorpus / "fuzz_param_spec", kiln::fuzz::run_spec_input);
}

TEST(FuzzReplay, CacheEntrySeedCorpusRuns) {
    replay_dir(kCorpus / "fuzz_cache_entry", kiln::fuzz::run_entry_input);
}

TEST(FuzzReplay, ParamSpecCrashersStayFixed) {
    replay_dir(kRegressions / "fuzz_param_spec", kiln::fuzz::run_spec_input);
}

// fuzz_cache_entry has found no crasher yet, so it has no folder: whatever fuzzer's crashers are
// kept, under a folder named after it, are replayed here, and a folder that names no fuzzer or
// holds nothing fails instead of passing on zero inputs.
TEST(FuzzReplay, EveryFolderOfCrashersIsReplayedThroughItsFuzzer) {
    const auto folders = regression_folders();
    EXPECT_FALSE(folders.empty()) << kRegressions << " holds no folder of crashers";
    for (const auto& folder : folders) {
        SCOPED_TRACE(folder.string());
        const Fuzzer* fuzzer = fuzzer_named(folder.filename().string());
        if (!fuzzer) {
            ADD_FAILURE() << folder << " names no fuzzer: its inputs would never be replayed";
            continue;
        }
        replay_dir(folder, fuzzer->harness);
    }
}

TEST(FuzzReplay, EmptyAndTinyInputsRun) {
    const std::uint8_t bytes[] = {'\n', 0, 0xff};
    for (std::size_t size = 0; size <= sizeof bytes; ++size) {
        EXPECT_NO_THROW(kiln::fuzz::run_spec_input(bytes, size));
        EXPECT_NO_THROW(kiln::fuzz::run_entry_input(bytes, size));
    }
}
