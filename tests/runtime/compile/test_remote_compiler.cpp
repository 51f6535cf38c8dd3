// The compiler over a store with a remote tier, as two CI machines would use it: one compiles and
// publishes, another with an empty cache directory gets the kernel from Redis without compiling;
// and a kernel already in memory never asks the server (here: a frozen one). No GPU needed.

#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"

#include "redis_server.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

using kiln::test::RedisServer;
using kiln::test::TempDir;

namespace {

const char* const kSource =
    "extern \"C\" __global__ void twice(float* x) { x[threadIdx.x] *= 2; }\n";

kiln::cache::Config remote_config(const std::filesystem::path& dir, const RedisServer& server) {
    kiln::cache::Config config;
    config.dir = dir;
    config.remote = kiln::cache::RemoteConfig::parse_url(server.url(), "test");
    config.remote->connect_timeout = std::chrono::milliseconds(1000);
    config.remote->op_timeout = std::chrono::milliseconds(1000);
    return config;
}

} // namespace

TEST(RemoteCompiler, AnotherMachineGetsTheKernelWithoutCompiling) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir first_dir, second_dir;
    const auto options = kiln::CompileOptions::for_arch("sm_90");
    std::string cubin;
    {
        kiln::cache::Store store(remote_config(first_dir.path(), *server));
        kiln::Compiler compiler(&store);
        auto program = compiler.compile(kSource, options);
        EXPECT_EQ(program->origin(), kiln::ProgramOrigin::compiled);
        cubin = program->cubin();
        EXPECT_TRUE(store.flush_remote());
    }
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 1);

    kiln::cache::Store store(remote_config(second_dir.path(), *server));
    kiln::Compiler compiler(&store);
    auto program = compiler.compile(kSource, options);
    EXPECT_EQ(program->origin(), kiln::ProgramOrigin::disk_cache);
    EXPECT_EQ(program->cubin(), cubin);
    const auto statistics = compiler.statistics();
    EXPECT_EQ(statistics.compiles, 0u);
    EXPECT_EQ(statistics.disk_hits, 1u);
    EXPECT_EQ(store.remote_stats().hits, 1u);
}

TEST(RemoteCompiler, AKernelInMemoryNeverAsksTheServer) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    TempDir dir;
    kiln::cache::Store store(remote_config(dir.path(), *server));
    kiln::Compiler compiler(&store);
    const auto options = kiln::CompileOptions::for_arch("sm_90");
    compiler.compile(kSource, options);
    ASSERT_TRUE(store.flush_remote());
    const auto before = store.remote_stats();
    server->pause(); // any request now would time out and be counted
    for (int i = 0; i < 100; ++i)
        compiler.compile(kSource, options);
    const auto after = store.remote_stats();
    server->resume();
    EXPECT_EQ(after.hits + after.misses + after.timeouts + after.errors + after.skipped,
              before.hits + before.misses + before.timeouts + before.errors + before.skipped);
    EXPECT_EQ(compiler.statistics().compiles, 1u);
    EXPECT_EQ(compiler.statistics().memory_hits, 100u);
}
