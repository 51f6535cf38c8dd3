// `kiln cache ...`, `kiln export` and `kiln import`, run as the real binary against a cache
// directory filled through the Store API.

#include "kiln/cache/store.hpp"

#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <ctime>
#include <set>

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
        entry.payload = std::string("\x7f"
                                    "ELF",
                                    4) +
                        std::string(payload_size - 4, name[0]);
        entry.lowered_names = {{"k<float>", "_Z1kIfEvv"}};
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
    ASSERT_TRUE(m_store.save_source(entry.key, "__global__ void k() {}\n"));
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
    const std::time_t long_ago = std::time(nullptr) - 3 * 86400;
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
    EXPECT_EQ(m_store.stats().entries, 0u);
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
