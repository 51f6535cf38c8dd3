// `kiln` with a remote cache: `kiln cache remote ping|stats`, the remote counters in
// `kiln cache stats`, and `kiln compile` / `kiln warm` publishing before they exit, so a second
// machine (here: a process with another empty cache directory) gets remote hits.

#include "redis_server.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kiln::test::RedisServer;
using kiln::test::run_command;

namespace {

class RemoteCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string kiln(const std::string& url, const std::string& cache, const std::string& args) {
        return "KILN_REMOTE_CACHE='" + url + "' KILN_CACHE_DIR='" + (m_dir / cache).string() +
               "' " KILN_TOOL_PATH " " + args;
    }
    std::string manifest() {
        nlohmann::json kernels = nlohmann::json::array();
        for (int i = 0; i < 3; ++i)
            kernels.push_back({{"source", "extern \"C\" __global__ void k(int* p) { *p = " +
                                              std::to_string(i) + "; }\n"}});
        kiln::test::write_file(m_dir / "m.json", nlohmann::json{{"kernels", kernels}}.dump());
        return (m_dir / "m.json").string();
    }
};

} // namespace

TEST_F(RemoteCli, PingPrintsTheLatencyAndVersion) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    auto text = run_command(kiln(server->url(), "c", "cache remote ping"));
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("PONG from redis://127.0.0.1:"), std::string::npos) << text.out;
    auto json = run_command(kiln(server->url(), "c", "cache remote ping --json"));
    ASSERT_EQ(json.status, 0) << json.err;
    auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["ok"], true);
    EXPECT_FALSE(j["server_version"].get<std::string>().empty());
    EXPECT_TRUE(j["latency_ms"].is_number());
}

TEST_F(RemoteCli, PingFailsClearly) {
    const std::string nowhere = "redis://127.0.0.1:" + std::to_string(kiln::test::free_port());
    auto result = run_command(kiln(nowhere, "c", "cache remote ping"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("cannot connect to " + nowhere), std::string::npos) << result.err;

    auto unset = run_command("KILN_CACHE_DIR='" + (m_dir / "c").string() +
                             "' " KILN_TOOL_PATH " cache remote ping");
    EXPECT_EQ(unset.status, 1);
    EXPECT_NE(unset.err.find("set KILN_REMOTE_CACHE"), std::string::npos) << unset.err;
}

TEST_F(RemoteCli, ABadSettingFailsEveryCommandNamingTheVariable) {
    auto result = run_command(kiln("redis://127.0.0.1:99999", "c", "cache dir"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("KILN_REMOTE_CACHE="), std::string::npos) << result.err;
    result = run_command("KILN_REMOTE_CACHE_MODE=sometimes " +
                         kiln("redis://127.0.0.1", "c", "cache dir"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("KILN_REMOTE_CACHE_MODE"), std::string::npos) << result.err;
}

TEST_F(RemoteCli, WarmPublishesAndAnotherDirectoryGetsRemoteHits) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    const auto path = manifest();
    auto first = run_command(kiln(server->url(), "first", "warm " + path + " --arch sm_90 --json"));
    ASSERT_EQ(first.status, 0) << first.err;
    EXPECT_EQ(nlohmann::json::parse(first.out)["misses"], 3);
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 3);

    auto second =
        run_command(kiln(server->url(), "second", "warm " + path + " --arch sm_90 --json"));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(nlohmann::json::parse(second.out)["hits"], 3);
    auto stats = run_command(kiln(server->url(), "second", "cache stats --json"));
    ASSERT_EQ(stats.status, 0) << stats.err;
    auto j = nlohmann::json::parse(stats.out);
    EXPECT_EQ(j["remote_stats"]["hits"], 3);
    EXPECT_EQ(j["remote_stats"]["misses"], 0);
    EXPECT_EQ(j["entries"], 3); // written back
    EXPECT_NE(j["remote"]["url"].get<std::string>().find("redis://127.0.0.1:"), std::string::npos);

    auto remote = run_command(kiln(server->url(), "first", "cache remote stats --json"));
    ASSERT_EQ(remote.status, 0) << remote.err;
    auto r = nlohmann::json::parse(remote.out);
    EXPECT_EQ(r["server"]["kiln_keys"], 3);
    EXPECT_EQ(r["counters"]["stores"], 3);
    EXPECT_GT(r["server"]["used_memory"].get<std::uint64_t>(), 0u);
}

TEST_F(RemoteCli, CompileWaitsForItsPublish) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    kiln::test::write_file(m_dir / "k.cu", "extern \"C\" __global__ void k(int* p) { *p = 7; }\n");
    auto result = run_command(
        kiln(server->url(), "c", "compile " + (m_dir / "k.cu").string() + " --arch sm_90"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 1);
    auto text = run_command(kiln(server->url(), "c", "cache stats"));
    EXPECT_NE(text.out.find("remote stores    1"), std::string::npos) << text.out;
}
