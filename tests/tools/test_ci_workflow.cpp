// The CI workflow of docs/remote-cache.md, end to end on the CPU with examples/ci/warm_fleet.sh: a
// GPU-less job compiles an application's kernels (a manifest of raw and front-end kernels, and the
// recipes an application run left in its cache) for every architecture of the fleet and publishes
// them; a job on another machine (a process with another empty cache directory) then gets every
// kernel from the remote tier, or from the archive, with no compile.

#include "redis_server.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using kiln::test::RedisServer;
using kiln::test::run_command;

namespace {

constexpr int kManifestKernels = 5;

class CiWorkflow : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;

    std::string path(const std::string& name) const { return (m_dir / name).string(); }

    // `kiln ARGS` with the cache directory @p cache (under the test's directory) and, when given,
    // the remote tier at @p url.
    std::string kiln(const std::string& cache, const std::string& args,
                     const std::string& url = {}) const {
        std::string env = "KILN_CACHE_DIR='" + path(cache) + "' ";
        if (!url.empty()) env += "KILN_REMOTE_CACHE='" + url + "' ";
        return env + KILN_TOOL_PATH " " + args;
    }

    // The GPU-less job: examples/ci/warm_fleet.sh with this build's kiln, in its own scratch
    // cache (the script makes one when KILN_CACHE_DIR is not set).
    kiln::test::CommandResult warm_fleet(const std::string& args, const std::string& url = {}) {
        std::string env = "env -u KILN_CACHE_DIR KILN_TOOL='" KILN_TOOL_PATH "' ";
        if (!url.empty()) env += "KILN_REMOTE_CACHE='" + url + "' ";
        return run_command(env + "bash '" KILN_CI_SCRIPT "' " + args);
    }

    // Three raw kernels, an ElementwiseKernel call and a ReductionKernel call.
    std::string manifest() const {
        nlohmann::json kernels = nlohmann::json::array();
        for (int i = 0; i < 3; ++i)
            kernels.push_back({{"source", "extern \"C\" __global__ void ci_k(int* p) { *p = " +
                                              std::to_string(i) + "; }\n"}});
        kernels.push_back(nlohmann::json::parse(R"json({
            "elementwise": {"name": "ci_scale", "in_params": "T x, T a", "out_params": "T y",
                            "operation": "y = x * a"},
            "args": [{"dtype": "float32", "shape": [1024]}, {"dtype": "float32", "scalar": true},
                     {"dtype": "float32", "shape": [1024]}]})json"));
        kernels.push_back(nlohmann::json::parse(R"json({
            "reduction": {"name": "ci_l2norm", "in_params": "T x", "out_params": "T y",
                          "map_expr": "x * x", "reduce_expr": "a + b",
                          "post_map_expr": "y = sqrt(a)", "identity": "0"},
            "args": [{"dtype": "float32", "shape": [256, 512]}], "axis": [1]})json"));
        kiln::test::write_file(m_dir / "m.json", nlohmann::json{{"kernels", kernels}}.dump());
        return path("m.json");
    }

    // What an application run left behind: a kernel compiled for sm_90 into @p cache, one that
    // is in no manifest.
    void application_run(const std::string& cache) {
        kiln::test::write_file(m_dir / "app.cu",
                               "extern \"C\" __global__ void app_only(float* p) { *p *= 3; }\n");
        auto run = run_command(kiln(cache, "compile " + path("app.cu") + " --arch sm_90"));
        ASSERT_EQ(run.status, 0) << run.err;
    }

    // `kiln warm MANIFEST --arch @p arch --json` in @p cache: its JSON summary.
    nlohmann::json warm(const std::string& cache, const std::string& arch,
                        const std::string& url = {}) {
        auto run =
            run_command(kiln(cache, "warm " + path("m.json") + " --arch " + arch + " --json", url));
        EXPECT_EQ(run.status, 0) << run.err;
        return nlohmann::json::parse(run.out);
    }
};

} // namespace

TEST_F(CiWorkflow, AnotherMachineGetsEveryKernelFromRedisWithNoCompile) {
    auto server = RedisServer::start_or_skip();
    if (!server) return;
    manifest();
    application_run("app");
    auto job = warm_fleet("--arch sm_80,sm_90 --manifest " + path("m.json") + " --from-cache " +
                              path("app") + " -j 2",
                          server->url());
    ASSERT_EQ(job.status, 0) << job.out << job.err;
    // Every manifest kernel and the application's kernel, each for both architectures.
    EXPECT_EQ(server->call({"DBSIZE"}).integer, 2 * (kManifestKernels + 1)) << job.out;

    for (const char* arch : {"sm_80", "sm_90"}) {
        SCOPED_TRACE(arch);
        const std::string machine = std::string("gpu-job-") + arch;
        const nlohmann::json summary = warm(machine, arch, server->url());
        EXPECT_EQ(summary["hits"], kManifestKernels);
        EXPECT_EQ(summary["misses"], 0);
        EXPECT_EQ(summary["compiles"], 0) << "a kernel was compiled instead of fetched";
        auto stats = run_command(kiln(machine, "cache stats --json", server->url()));
        ASSERT_EQ(stats.status, 0) << stats.err;
        EXPECT_EQ(nlohmann::json::parse(stats.out)["remote_stats"]["hits"], kManifestKernels);
    }
    auto app = run_command(
        kiln("gpu-job-app", "compile " + path("app.cu") + " --arch sm_80 --json", server->url()));
    ASSERT_EQ(app.status, 0) << app.err;
    EXPECT_EQ(nlohmann::json::parse(app.out)["cache"], "hit") << app.out;
}

TEST_F(CiWorkflow, AnotherMachineGetsEveryKernelFromTheArchiveWithNoCompile) {
    manifest();
    auto job = warm_fleet("--arch sm_80 --manifest " + path("m.json") + " --archive " +
                          path("fleet.kiln-archive"));
    ASSERT_EQ(job.status, 0) << job.out << job.err;
    auto import = run_command(kiln("gpu-job", "import " + path("fleet.kiln-archive")));
    ASSERT_EQ(import.status, 0) << import.err;
    const nlohmann::json summary = warm("gpu-job", "sm_80");
    EXPECT_EQ(summary["hits"], kManifestKernels);
    EXPECT_EQ(summary["compiles"], 0);
    // A kernel the fleet's job did not warm is compiled: the hits above are not a fluke.
    EXPECT_EQ(warm("gpu-job", "sm_90")["compiles"], kManifestKernels);
}

TEST_F(CiWorkflow, TheScriptRefusesToRunWithoutArchitecturesOrKernels) {
    auto no_arch = warm_fleet("--manifest " + manifest());
    EXPECT_EQ(no_arch.status, 2);
    EXPECT_NE(no_arch.err.find("--arch is required"), std::string::npos) << no_arch.err;
    auto nothing = warm_fleet("--arch sm_90");
    EXPECT_EQ(nothing.status, 2);
    EXPECT_NE(nothing.err.find("at least one --manifest or --from-cache"), std::string::npos)
        << nothing.err;
    auto failing = warm_fleet("--arch sm_90 --manifest " + path("missing.json"));
    EXPECT_NE(failing.status, 0);
}
