// `kiln cache ...`, `kiln export` and `kiln import`, run as the real binary against a cache
// directory filled through the Store API.

#include "kiln/cache/store.hpp"

#include "golden_v1.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>
#include <vector>

using kiln::test::run_command;

namespace {

class CacheCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::filesystem::path m_cache = m_dir / "cache";
    kiln::cache::Store m_store{config()};

    kiln::cache::Config config() const {
        kiln::cache::Config config;
        config.dir = m_cache;
        return config;
    }
    std::string kiln(const std::string& args, const std::filesystem::path& cache = {}) const {
        return "KILN_CACHE_DIR='" + (cache.empty() ? m_cache : cache).string() +
               "' " KILN_TOOL_PATH " " + args;
    }
    kiln::cache::Entry add(const std::string& name, std::size_t payload_size = 3000) {
        kiln::cache::Entry entry;
        entry.key = kiln::cache::KeyBuilder().add("cli", name).finish();
        // Bytes that do not compress, so that an entry's file is about its payload's size.
        entry.payload = std::string("\x7f"
                                    "ELF",
                                    4);
        std::uint64_t state = static_cast<unsigned char>(name[0]);
        for (std::size_t i = 4; i < payload_size; ++i) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            entry.payload.push_back(static_cast<char>(state >> 56));
        }
        entry.lowered_names = {{"k<float>", "_Z1kIfEvv"}};
        entry.kernel_names = {"_Z1kIfEvv"};
        entry.nvrtc_version = "13.0.88";
        entry.arch = "sm_90";
        entry.compile_ms = 3.5;
        entry.log = "a warning from " + name;
        EXPECT_TRUE(m_store.store(entry));
        return entry;
    }
    std::filesystem::path file_of(const kiln::cache::Key& key) const {
        return m_cache / key.hex().substr(0, 2) / (key.hex() + ".kiln");
    }
};

std::size_t lines(const std::string& text) {
    return std::count(text.begin(), text.end(), '\n');
}

} // namespace

TEST_F(CacheCli, DirPrintsTheCacheDirectory) {
    auto result = run_command(kiln("cache dir"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(result.out, m_cache.string() + "\n");
}

TEST_F(CacheCli, StatsJsonHasTheCounters) {
    const auto a = add("a"), b = add("b");
    ASSERT_TRUE(m_store.load(a.key));
    ASSERT_FALSE(m_store.load(kiln::cache::KeyBuilder().add("cli", "absent").finish()));
    m_store.local().write_statistics(); // lookups are counted in memory until then
    auto result = run_command(kiln("cache stats --json"));
    ASSERT_EQ(result.status, 0) << result.err;
    const auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(j.at("entries"), 2);
    EXPECT_EQ(j.at("bytes"), std::filesystem::file_size(file_of(a.key)) +
                                 std::filesystem::file_size(file_of(b.key)));
    EXPECT_EQ(j.at("hits"), 1);
    EXPECT_EQ(j.at("misses"), 1);
    EXPECT_EQ(j.at("damaged"), 0);
    EXPECT_EQ(j.at("evicted"), 0);
    EXPECT_EQ(j.at("stores"), 2);

    auto text = run_command(kiln("cache stats"));
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("entries          2\n"), std::string::npos) << text.out;
}

TEST_F(CacheCli, LsListsEveryEntry) {
    const auto a = add("a"), b = add("b");
    auto text = run_command(kiln("cache ls"));
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_EQ(lines(text.out), 2u);
    EXPECT_NE(text.out.find(a.key.hex()), std::string::npos);
    EXPECT_NE(text.out.find("sm_90"), std::string::npos);

    auto json = run_command(kiln("cache ls --json"));
    ASSERT_EQ(json.status, 0) << json.err;
    std::set<std::string> keys;
    for (const auto& item : nlohmann::json::parse(json.out)) {
        keys.insert(item.at("key").get<std::string>());
        EXPECT_EQ(item.at("arch"), "sm_90");
        EXPECT_EQ(item.at("kernels"), 1);
        EXPECT_EQ(item.at("payload_size"), 3000);
    }
    EXPECT_EQ(keys, (std::set<std::string>{a.key.hex(), b.key.hex()}));
}

TEST_F(CacheCli, VerifyExitsOneOnDamageUntilFixed) {
    add("good");
    const auto bad = add("bad");
    auto clean = run_command(kiln("cache verify"));
    EXPECT_EQ(clean.status, 0) << clean.err;
    EXPECT_NE(clean.out.find("2 ok, 0 damaged"), std::string::npos) << clean.out;

    kiln::test::write_file(file_of(bad.key), "garbage");
    auto damaged = run_command(kiln("cache verify"));
    EXPECT_EQ(damaged.status, 1);
    EXPECT_NE(damaged.out.find(file_of(bad.key).string()), std::string::npos) << damaged.out;
    EXPECT_EQ(lines(damaged.err), 1u) << damaged.err;

    auto fixed = run_command(kiln("cache verify --fix"));
    EXPECT_EQ(fixed.status, 0) << fixed.err;
    EXPECT_FALSE(std::filesystem::exists(file_of(bad.key)));
    EXPECT_EQ(run_command(kiln("cache verify")).status, 0);
}

TEST_F(CacheCli, ShowCubinWritesTheRawPayload) {
    const auto entry = add("cubin", 5000);
    const auto out = m_dir / "k.cubin";
    auto result =
        run_command(kiln("cache show " + entry.key.hex() + " --cubin > '" + out.string() + "'"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(kiln::test::read_file(out), entry.payload);
}

TEST_F(CacheCli, ShowPrintsMetadataLogAndSource) {
    const auto entry = add("show");
    auto summary = run_command(kiln("cache show " + entry.key.hex()));
    ASSERT_EQ(summary.status, 0) << summary.err;
    EXPECT_NE(summary.out.find("k<float> -> _Z1kIfEvv"), std::string::npos) << summary.out;
    EXPECT_NE(summary.out.find("13.0.88"), std::string::npos) << summary.out;

    auto log = run_command(kiln("cache show " + entry.key.hex() + " --log"));
    ASSERT_EQ(log.status, 0) << log.err;
    EXPECT_EQ(log.out, "a warning from show\n");

    auto no_source = run_command(kiln("cache show " + entry.key.hex() + " --source"));
    EXPECT_EQ(no_source.status, 1);
    EXPECT_EQ(lines(no_source.err), 1u) << no_source.err;
    ASSERT_TRUE(m_store.local().save_source(entry.key, "__global__ void k() {}\n"));
    auto source = run_command(kiln("cache show " + entry.key.hex() + " --source"));
    ASSERT_EQ(source.status, 0) << source.err;
    EXPECT_EQ(source.out, "__global__ void k() {}\n");
}

TEST_F(CacheCli, ShowAcceptsOnlyAKey) {
    add("x");
    for (const char* bad : {"../../etc/passwd", "00/../../../../../../../etc/passw", "xyz", "''"}) {
        auto result = run_command(kiln(std::string("cache show ") + bad + " --cubin"));
        EXPECT_EQ(result.status, 1) << bad;
        EXPECT_TRUE(result.out.empty()) << bad;
        EXPECT_EQ(lines(result.err), 1u) << result.err;
    }
    auto absent = run_command(kiln("cache show 00000000000000000000000000000000"));
    EXPECT_EQ(absent.status, 1);
    EXPECT_NE(absent.err.find("no such entry"), std::string::npos) << absent.err;
}

TEST_F(CacheCli, PruneByAgeThenBySize) {
    const auto old_entry = add("old"), new_entry = add("new");
    const std::time_t long_ago = std::time(nullptr) - std::time_t{3} * 86400;
    const timespec times[2] = {{long_ago, 0}, {long_ago, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, file_of(old_entry.key).c_str(), times, 0), 0);

    auto by_age = run_command(kiln("cache prune --max-age 2d"));
    ASSERT_EQ(by_age.status, 0) << by_age.err;
    EXPECT_EQ(by_age.out.rfind("removed 1 entries", 0), 0u) << by_age.out;
    EXPECT_FALSE(std::filesystem::exists(file_of(old_entry.key)));
    EXPECT_TRUE(std::filesystem::exists(file_of(new_entry.key)));

    auto by_size = run_command(kiln("cache prune --max-size 0"));
    ASSERT_EQ(by_size.status, 0) << by_size.err;
    EXPECT_FALSE(std::filesystem::exists(file_of(new_entry.key)));

    EXPECT_EQ(run_command(kiln("cache prune --max-size lots")).status, 1);
    EXPECT_EQ(run_command(kiln("cache prune --max-age 7")).status, 1);
}

TEST_F(CacheCli, ClearRemovesEveryEntry) {
    for (const char* name : {"a", "b", "c"})
        add(name);
    auto result = run_command(kiln("cache clear"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(result.out.rfind("removed 3 entries", 0), 0u) << result.out;
    EXPECT_EQ(m_store.local().stats().entries, 0u);
}

TEST_F(CacheCli, ExportThenImportIntoAnotherCache) {
    const auto a = add("a"), b = add("b");
    const auto archive = m_dir / "cache.kilnarc";
    auto exported = run_command(kiln("export '" + archive.string() + "'"));
    ASSERT_EQ(exported.status, 0) << exported.err;
    EXPECT_EQ(exported.out.rfind("exported 2 entries", 0), 0u) << exported.out;

    const auto other = m_dir / "other";
    auto imported = run_command(kiln("import '" + archive.string() + "'", other));
    ASSERT_EQ(imported.status, 0) << imported.err;
    EXPECT_EQ(imported.out.rfind("imported 2 entries", 0), 0u) << imported.out;
    auto listed = run_command(kiln("cache ls --json", other));
    ASSERT_EQ(listed.status, 0) << listed.err;
    EXPECT_EQ(nlohmann::json::parse(listed.out).size(), 2u);
    EXPECT_EQ(run_command(kiln("cache verify", other)).status, 0);

    kiln::test::write_file(m_dir / "junk", "not an archive");
    auto junk = run_command(kiln("import '" + (m_dir / "junk").string() + "'", other));
    EXPECT_EQ(junk.status, 1);
    EXPECT_EQ(lines(junk.err), 1u) << junk.err;
}

TEST_F(CacheCli, AnUnparsableEnvironmentIsAOneLineError) {
    auto result = run_command("KILN_CACHE_MAX_SIZE=lots " + kiln("cache stats"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("KILN_CACHE_MAX_SIZE"), std::string::npos) << result.err;
    EXPECT_EQ(lines(result.err), 1u) << result.err;
}

TEST_F(CacheCli, AMissingCacheDirectoryIsAnErrorNotAnEmptyCache) {
    const auto missing = m_dir / "absent";
    kiln::test::write_file(m_dir / "file", "not a directory");
    for (const auto& dir : {missing, m_dir / "file"}) {
        const char* const export_command = "export '" KILN_TOOL_PATH ".never'";
        for (const char* command :
             {"cache stats", "cache ls", "cache verify", "cache stats --json", export_command}) {
            auto result = run_command(kiln(command, dir));
            EXPECT_EQ(result.status, 1) << command << " " << dir;
            EXPECT_NE(result.err.find(dir.string()), std::string::npos) << result.err;
            EXPECT_EQ(lines(result.err), 1u) << result.err;
        }
    }
    EXPECT_FALSE(std::filesystem::exists(missing)) << "looking does not create it";
}

TEST_F(CacheCli, ShardProblemsAreReportedAndMakeVerifyFail) {
    add("a");
    kiln::test::write_file(m_cache / "ee", "a file where a shard should be");
    auto stats = run_command(kiln("cache stats --json"));
    ASSERT_EQ(stats.status, 0) << stats.err;
    const auto problems = nlohmann::json::parse(stats.out).at("problems");
    ASSERT_EQ(problems.size(), 1u) << stats.out;
    EXPECT_EQ(problems[0].at("path"), (m_cache / "ee").string());
    EXPECT_NE(stats.err.find((m_cache / "ee").string()), std::string::npos) << stats.err;
    auto ls = run_command(kiln("cache ls"));
    EXPECT_EQ(ls.status, 0) << ls.err;
    EXPECT_NE(ls.err.find((m_cache / "ee").string()), std::string::npos) << ls.err;
    auto verify = run_command(kiln("cache verify --json"));
    EXPECT_EQ(verify.status, 1);
    EXPECT_EQ(nlohmann::json::parse(verify.out).at("problems").size(), 1u) << verify.out;
}

TEST_F(CacheCli, AFailedWriteToStdoutExitsOne) {
    const auto entry = add("full");
    for (const std::string& command : std::vector<std::string>{
             "cache show " + entry.key.hex() + " --cubin", "cache show " + entry.key.hex(),
             "cache ls", "cache stats --json"}) {
        auto result = run_command(kiln(command) + " > /dev/full");
        EXPECT_EQ(result.status, 1) << command;
        EXPECT_NE(result.err.find("No space left on device"), std::string::npos) << result.err;
    }
}

TEST_F(CacheCli, LsCountsAndNamesTheKernelsOfARealCubin) {
    kiln::test::write_file(m_dir / "k.cu", "extern \"C\" __global__ void k(float* p) { *p += 1; }\n"
                                           "template <int N> __global__ void fill(int* p) "
                                           "{ *p = N; }\n");
    kiln::test::write_file(m_dir / "c.cu",
                           "extern \"C\" __global__ void only(int* p) { *p = 1; }\n");
    ASSERT_EQ(run_command(kiln("compile '" + (m_dir / "k.cu").string() +
                               "' --arch sm_90 --name-expr 'fill<3>'"))
                  .status,
              0);
    ASSERT_EQ(run_command(kiln("compile '" + (m_dir / "c.cu").string() + "' --arch sm_90")).status,
              0);
    auto json = run_command(kiln("cache ls --json"));
    ASSERT_EQ(json.status, 0) << json.err;
    std::set<std::string> names;
    for (const auto& item : nlohmann::json::parse(json.out)) {
        const auto kernels = item.at("kernel_names").get<std::vector<std::string>>();
        EXPECT_EQ(item.at("kernels"), kernels.size());
        names.insert(kernels.begin(), kernels.end());
    }
    EXPECT_EQ(names, (std::set<std::string>{"k", "_Z4fillILi3EEvPi", "only"}));
    auto text = run_command(kiln("cache ls"));
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("1 kernel   nvrtc"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("2 kernels  nvrtc"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find(" only\n"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find(" +1 more"), std::string::npos) << text.out;
}

TEST_F(CacheCli, ShowAcceptsAUniqueKeyPrefix) {
    // Enough entries that two share a first digit.
    std::map<char, std::vector<std::string>> by_digit;
    for (int i = 0; i < 17; ++i) {
        const auto hex = add("p" + std::to_string(i)).key.hex();
        by_digit[hex[0]].push_back(hex);
    }
    const auto unique = std::find_if(by_digit.begin(), by_digit.end(),
                                     [](const auto& item) { return item.second.size() >= 1; });
    const std::string key = unique->second.front();
    auto shown = run_command(kiln("cache show " + key.substr(0, 12)));
    ASSERT_EQ(shown.status, 0) << shown.err;
    EXPECT_NE(shown.out.find("key           " + key), std::string::npos) << shown.out;

    const auto shared = std::find_if(by_digit.begin(), by_digit.end(),
                                     [](const auto& item) { return item.second.size() >= 2; });
    ASSERT_NE(shared, by_digit.end());
    auto ambiguous = run_command(kiln(std::string("cache show ") + shared->first));
    EXPECT_EQ(ambiguous.status, 1);
    EXPECT_NE(ambiguous.err.find("give more digits"), std::string::npos) << ambiguous.err;
    EXPECT_EQ(lines(ambiguous.err), 1u) << ambiguous.err;

    std::string absent = "0123456789abcdef";
    absent.erase(std::remove_if(absent.begin(), absent.end(),
                                [&](char c) { return by_digit.count(c) != 0; }),
                 absent.end());
    if (absent.empty()) return; // every first digit is taken
    auto none = run_command(kiln(std::string("cache show ") + absent[0]));
    EXPECT_EQ(none.status, 1);
    EXPECT_NE(none.err.find("no entry's key starts with"), std::string::npos) << none.err;
}

TEST_F(CacheCli, EveryCommandSpeaksJson) {
    const auto a = add("a");
    add("b");
    ASSERT_TRUE(m_store.load(a.key));
    m_store.local().write_statistics();
    auto parse = [&](const std::string& command, const std::filesystem::path& cache = {}) {
        auto result = run_command(kiln(command + " --json", cache));
        EXPECT_EQ(result.status, 0) << command << ": " << result.err;
        return nlohmann::json::parse(result.out);
    };
    EXPECT_EQ(parse("cache dir").at("dir"), m_cache.string());
    const auto shown = parse("cache show " + a.key.hex());
    EXPECT_EQ(shown.at("key"), a.key.hex());
    EXPECT_EQ(shown.at("lowered_names").at("k<float>"), "_Z1kIfEvv");
    EXPECT_EQ(shown.at("log"), "a warning from a");
    EXPECT_EQ(parse("cache stats").at("hit_rate"), 1.0);
    EXPECT_EQ(parse("cache verify").at("ok"), 2);
    const auto archive = (m_dir / "a.kilnarc").string();
    EXPECT_EQ(parse("export '" + archive + "'").at("entries"), 2);
    const auto imported = parse("import '" + archive + "'", m_dir / "other");
    EXPECT_EQ(imported.at("entries"), 2);
    EXPECT_EQ(imported.at("present"), 0);
    EXPECT_EQ(parse("import '" + archive + "'", m_dir / "other").at("present"), 2);
    EXPECT_EQ(parse("cache prune --max-size 1").at("entries"), 2);
    EXPECT_EQ(parse("cache clear", m_dir / "other").at("entries"), 2);
    EXPECT_EQ(parse("cache config").at("settings")[0].at("name"), "max-size");
}

// A generated kernel's memo holds a cubin: stats count it and its bytes, verify checks it.
TEST_F(CacheCli, StatsCountMemosAndVerifyChecksThem) {
    const auto a = add("a");
    const auto signature = kiln::cache::KeyBuilder().add("cli", "memo").finish();
    ASSERT_TRUE(m_store.store_memo(signature, {a.key, "k", std::string(900, 'c')}));
    auto stats = run_command(kiln("cache stats --json"));
    ASSERT_EQ(stats.status, 0) << stats.err;
    const auto j = nlohmann::json::parse(stats.out);
    EXPECT_EQ(j.at("entries"), 1);
    EXPECT_EQ(j.at("memos"), 1);
    EXPECT_GE(j.at("bytes").get<std::uint64_t>(),
              std::filesystem::file_size(m_store.local().memo_path(signature)));
    EXPECT_NE(run_command(kiln("cache stats")).out.find("memos            1"), std::string::npos);
    auto verified = run_command(kiln("cache verify --json"));
    EXPECT_EQ(nlohmann::json::parse(verified.out).at("checked"), 2) << verified.out;
    std::string bytes = kiln::test::read_file(m_store.local().memo_path(signature));
    bytes[40] ^= 1;
    kiln::test::write_file(m_store.local().memo_path(signature), bytes);
    ::chmod(m_store.local().memo_path(signature).c_str(), 0600);
    auto damaged = run_command(kiln("cache verify"));
    EXPECT_NE(damaged.status, 0);
    EXPECT_NE(damaged.out.find(".memo"), std::string::npos) << damaged.out;
}

TEST_F(CacheCli, ClearSaysHowManyMemosItRemoved) {
    const auto a = add("a");
    const auto signature = kiln::cache::KeyBuilder().add("cli", "cleared memo").finish();
    ASSERT_TRUE(m_store.store_memo(signature, {a.key, "k", std::string(900, 'c')}));
    auto cleared = run_command(kiln("cache clear --json"));
    ASSERT_EQ(cleared.status, 0) << cleared.err;
    const auto j = nlohmann::json::parse(cleared.out);
    EXPECT_EQ(j.at("entries"), 1);
    EXPECT_EQ(j.at("memos"), 1);
    EXPECT_FALSE(std::filesystem::exists(m_store.local().memo_path(signature)));
}

TEST_F(CacheCli, StatsZeroResetsTheCountersAndKeepsTheEntries) {
    const auto a = add("a");
    ASSERT_TRUE(m_store.load(a.key));
    auto zero = run_command(kiln("cache stats --zero"));
    ASSERT_EQ(zero.status, 0) << zero.err;
    const auto j = nlohmann::json::parse(run_command(kiln("cache stats --json")).out);
    EXPECT_EQ(j.at("hits"), 0);
    EXPECT_EQ(j.at("stores"), 0);
    EXPECT_EQ(j.at("entries"), 1);
    EXPECT_EQ(j.at("hit_rate"), nullptr);
}

// `stats --zero` while another process holds a shard's lock for good (any member of a shared
// cache can): it ends after a brief wait, names the file it could not reset, and fails.
TEST_F(CacheCli, StatsZeroWithALockedShardEndsAndNamesTheFile) {
    const auto a = add("a");
    add("b");
    const auto stats = file_of(a.key).parent_path() / "stats";
    const int held = ::open(stats.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(held, 0);
    ASSERT_EQ(::flock(held, LOCK_EX | LOCK_NB), 0);
    auto zero = run_command("KILN_CACHE_DIR='" + m_cache.string() +
                            "' timeout 120 " KILN_TOOL_PATH " cache stats --zero");
    ::close(held);
    EXPECT_NE(zero.status, 124) << "it did not end";
    EXPECT_EQ(zero.status, 1) << zero.err;
    EXPECT_NE(zero.err.find(stats.string() + " (locked by another process)"), std::string::npos)
        << zero.err;
}

// Counts a process left beside a locked stats file are counts: `stats` shows them; what is not
// such a file there, `verify` reports and `--fix` removes.
TEST_F(CacheCli, StatsShowLeftCountsAndVerifyReportsWhatIsNoneThere) {
    const auto a = add("a");
    const auto shard = file_of(a.key).parent_path();
    const auto left = shard / ".stats-pending.00000000000000a1";
    const auto planted = shard / ".stats-pending.00000000000000a2";
    kiln::test::write_file(left, "hits 7\nend\n");
    std::filesystem::create_directory(planted);
    auto stats = run_command(kiln("cache stats --json"));
    ASSERT_EQ(stats.status, 0) << stats.err;
    EXPECT_EQ(nlohmann::json::parse(stats.out).at("hits"), 7);
    auto verify = run_command(kiln("cache verify"));
    EXPECT_EQ(verify.status, 1);
    EXPECT_NE(verify.out.find(planted.string()), std::string::npos) << verify.out;
    EXPECT_EQ(verify.out.find(left.string()), std::string::npos) << verify.out;
    auto fixed = run_command(kiln("cache verify --fix"));
    EXPECT_EQ(fixed.status, 0) << fixed.out << fixed.err;
    EXPECT_FALSE(std::filesystem::exists(planted));
    EXPECT_TRUE(std::filesystem::exists(left));
}

TEST_F(CacheCli, ClearedEntriesAreNotCountedAsEvicted) {
    add("a");
    add("b");
    ASSERT_EQ(run_command(kiln("cache clear")).status, 0);
    const auto j = nlohmann::json::parse(run_command(kiln("cache stats --json")).out);
    EXPECT_EQ(j.at("evicted"), 0);
    EXPECT_EQ(j.at("entries"), 0);
}

TEST_F(CacheCli, TheMaxSizeSettingIsKeptInTheCacheAndUsedByPrune) {
    for (const char* name : {"a", "b", "c"})
        add(name); // about 3.2 KiB each
    auto set = run_command(kiln("cache config max-size 7K"));
    ASSERT_EQ(set.status, 0) << set.err;
    EXPECT_EQ(run_command(kiln("cache config max-size")).out, "7K\n");
    EXPECT_NE(run_command(kiln("cache config")).out.find("max-size = 7K"), std::string::npos);
    EXPECT_EQ(run_command("KILN_CACHE_MAX_SIZE=1G " + kiln("cache config max-size")).out, "1G\n");
    auto pruned = run_command(kiln("cache prune --json"));
    ASSERT_EQ(pruned.status, 0) << pruned.err;
    EXPECT_EQ(nlohmann::json::parse(pruned.out).at("entries"), 1);
    EXPECT_EQ(m_store.local().stats().entries, 2u);

    auto unknown = run_command(kiln("cache config colour blue"));
    EXPECT_EQ(unknown.status, 1);
    EXPECT_NE(unknown.err.find("unknown setting 'colour'"), std::string::npos) << unknown.err;
    auto bad = run_command(kiln("cache config max-size lots"));
    EXPECT_EQ(bad.status, 1);
    EXPECT_EQ(run_command(kiln("cache config max-size")).out, "7K\n");

    // A bad value in the file is an error naming it, which `config` itself can still fix.
    kiln::test::write_file(m_cache / "kiln.conf", "max-size = lots\n");
    ::chmod((m_cache / "kiln.conf").c_str(), 0600);
    auto broken = run_command(kiln("cache stats"));
    EXPECT_EQ(broken.status, 1);
    EXPECT_NE(broken.err.find((m_cache / "kiln.conf").string()), std::string::npos) << broken.err;
    EXPECT_EQ(run_command(kiln("cache config max-size 1G")).status, 0);
    EXPECT_EQ(run_command(kiln("cache stats")).status, 0);
}

TEST_F(CacheCli, CommandsThatChangeTheCacheAreRefusedWhenItIsReadOnlyOrOff) {
    const auto entry = add("kept");
    const auto archive = (m_dir / "a.kilnarc").string();
    ASSERT_EQ(run_command(kiln("export '" + archive + "'")).status, 0);
    for (const std::string variable : {"KILN_CACHE_READONLY", "KILN_CACHE_DISABLE"}) {
        for (const std::string& command : std::vector<std::string>{
                 "import '" + archive + "'", "cache clear", "cache prune --max-size 0",
                 "cache verify --fix", "cache stats --zero", "cache config max-size 1G"}) {
            auto result = run_command(variable + "=1 " + kiln(command, m_dir / "other"));
            EXPECT_EQ(result.status, 1) << variable << " " << command;
            EXPECT_NE(result.err.find(variable), std::string::npos) << result.err;
            EXPECT_EQ(lines(result.err), 1u) << result.err;
            auto here = run_command(variable + "=1 " + kiln(command));
            EXPECT_EQ(here.status, 1) << variable << " " << command;
        }
    }
    EXPECT_FALSE(std::filesystem::exists(m_dir / "other"));
    EXPECT_TRUE(std::filesystem::exists(file_of(entry.key)));
    EXPECT_FALSE(std::filesystem::exists(m_cache / "kiln.conf"));
}

TEST_F(CacheCli, UsageErrorsExitTwoWithAHint) {
    for (const char* command : {"cache", "cache stats --bogus", "cache show", "import"}) {
        auto result = run_command(kiln(command));
        EXPECT_EQ(result.status, 2) << command;
        EXPECT_NE(result.err.find("--help' for usage."), std::string::npos) << result.err;
    }
    auto hint = run_command(kiln("cache stats --bogus"));
    EXPECT_NE(hint.err.find("Run 'kiln cache stats --help'"), std::string::npos) << hint.err;
    EXPECT_EQ(run_command(kiln("cache --help")).status, 0);
}

TEST_F(CacheCli, ShowPrintsTheRecipeAndLinkInputs) {
    kiln::cache::Entry entry = add("recipe");
    kiln::cache::Recipe recipe;
    recipe.source = "template <int N> __global__ void k() {}\n";
    recipe.options = {"-DM=3", "--use_fast_math"};
    recipe.headers = {{"scale.cuh", "#define SCALE 2\n"}};
    recipe.name_expressions = {"k<1>"};
    recipe.lineinfo = false;
    recipe.program_name = "/somewhere/k.cu";
    recipe.description = R"({"front_end":"ElementwiseKernel","dtypes":["float32"]})";
    entry.recipe = recipe;
    entry.link_inputs = {{kiln::cache::LinkInputKind::library, "libpart.a", "0123456789", {}},
                         {kiln::cache::LinkInputKind::ltoir, "b.cu", "", entry.key}};
    ASSERT_TRUE(m_store.store(entry));

    auto text = run_command(kiln("cache show " + entry.key.hex()));
    ASSERT_EQ(text.status, 0) << text.err;
    for (const std::string& line : std::vector<std::string>{
             "format        3\n", "kernels       1\n  void k<float>()\n",
             "  program     /somewhere/k.cu\n", "  options     -DM=3 --use_fast_math\n",
             "    scale.cuh (16 bytes)\n", "  expressions k<1>\n", "  lineinfo    off\n",
             "  description {\"front_end\":\"ElementwiseKernel\"", "link inputs   2\n",
             "  library libpart.a (10 bytes)\n",
             "  ltoir   b.cu (entry " + entry.key.hex() + ")\n"})
        EXPECT_NE(text.out.find(line), std::string::npos) << line << " in\n" << text.out;

    auto json = run_command(kiln("cache show " + entry.key.hex() + " --json"));
    ASSERT_EQ(json.status, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j.at("recipe").at("options"), nlohmann::json({"-DM=3", "--use_fast_math"}));
    EXPECT_EQ(j.at("recipe").at("headers").at(0).at("size"), 16);
    EXPECT_EQ(j.at("recipe").at("description").at("front_end"), "ElementwiseKernel");
    EXPECT_EQ(j.at("link_inputs").at(1).at("key"), entry.key.hex());

    // --source prints the recipe's source: no saved `.cu` needed.
    auto source = run_command(kiln("cache show " + entry.key.hex() + " --source"));
    ASSERT_EQ(source.status, 0) << source.err;
    EXPECT_EQ(source.out, recipe.source);
}

TEST_F(CacheCli, Version1EntriesAreListedShownVerifiedAndPruned) {
    add("current");
    ASSERT_TRUE(kiln::test::store_golden_v1(m_cache.string()));
    auto ls = run_command(kiln("cache ls"));
    ASSERT_EQ(ls.status, 0) << ls.err;
    EXPECT_EQ(lines(ls.out), 2u);
    const auto old_line = ls.out.find(kiln::test::kGoldenV1Key);
    ASSERT_NE(old_line, std::string::npos) << ls.out;
    EXPECT_NE(ls.out.find("(old format)", old_line), std::string::npos) << ls.out;
    auto json = run_command(kiln("cache ls --json"));
    for (const auto& item : nlohmann::json::parse(json.out))
        EXPECT_EQ(item.at("format_version"), item.at("key") == kiln::test::kGoldenV1Key
                                                 ? 1u
                                                 : kiln::cache::kEntryFormatVersion);

    auto shown = run_command(kiln(std::string("cache show ") + kiln::test::kGoldenV1Key));
    ASSERT_EQ(shown.status, 0) << shown.err;
    EXPECT_NE(shown.out.find("format        1 (old"), std::string::npos) << shown.out;
    EXPECT_NE(shown.out.find("recipe        none (written before entry format 2)"),
              std::string::npos)
        << shown.out;

    auto verified = run_command(kiln("cache verify"));
    EXPECT_EQ(verified.status, 0) << verified.out << verified.err;
    EXPECT_NE(verified.out.find("2 ok, 0 damaged"), std::string::npos) << verified.out;
    auto pruned = run_command(kiln("cache prune --max-size 0"));
    ASSERT_EQ(pruned.status, 0) << pruned.err;
    EXPECT_TRUE(m_store.local().list().empty());
}

// `kiln export` replaces only a new or regular file; a FIFO or another non-file at the name is
// refused and left as it is, and `-` writes the archive to standard output, which imports.
TEST_F(CacheCli, ExportWritesOnlyToARegularFileOrToStandardOutput) {
    add("exported");
    const auto fifo = m_dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto refused = run_command(kiln("export " + fifo.string()));
    EXPECT_EQ(refused.status, 1);
    EXPECT_NE(refused.err.find("not a regular file"), std::string::npos) << refused.err;
    struct stat st {};
    ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
    EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";

    const auto archive = m_dir / "piped.kar";
    auto piped = run_command(kiln("export - > " + archive.string()));
    ASSERT_EQ(piped.status, 0) << piped.err;
    EXPECT_NE(piped.err.find("exported 1 entries"), std::string::npos) << piped.err;
    auto imported = run_command(kiln("import " + archive.string(), m_dir / "other"));
    ASSERT_EQ(imported.status, 0) << imported.err;
    EXPECT_NE(imported.out.find("imported 1 entries"), std::string::npos) << imported.out;
}
