#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>

using kiln::test::run_command;

namespace {

class WarmCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string kiln(const std::string& args) const {
        return "KILN_CACHE_DIR='" + (m_dir / "cache").string() + "' " KILN_TOOL_PATH " " + args;
    }
    std::string manifest(const std::string& name, const nlohmann::json& kernels) const {
        kiln::test::write_file(m_dir / name, nlohmann::json{{"kernels", kernels}}.dump());
        return (m_dir / name).string();
    }
    nlohmann::json good_kernels() const {
        kiln::test::write_file(
            m_dir / "scale.cu",
            "template <class T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n");
        nlohmann::json kernels = nlohmann::json::array();
        for (int i = 0; i < 4; ++i)
            kernels.push_back({{"source", "extern \"C\" __global__ void k(int* p) { *p = " +
                                              std::to_string(i) + "; }\n"}});
        kernels.push_back({{"file", "scale.cu"},
                           {"options", {"-DUNUSED=1"}},
                           {"name_expressions", {"scale<float>", "scale<double>"}}});
        kernels.push_back(
            {{"source",
              "template <int N> __global__ void fill(int* p) { p[threadIdx.x] = N * M; }\n"},
             {"options", {"-DM=3", "--use_fast_math"}},
             {"name_expressions", {"fill<1>", "fill<2>"}}});
        return kernels;
    }
};

} // namespace

TEST_F(WarmCli, CompilesEveryKernelForEveryArchitectureThenHits) {
    const auto path = manifest("m.json", good_kernels());
    auto first = run_command(kiln("warm " + path + " --arch sm_80,sm_90 -j 2 --json"));
    ASSERT_EQ(first.status, 0) << first.err;
    auto j = nlohmann::json::parse(first.out);
    EXPECT_EQ(j["kernels"], 6);
    EXPECT_EQ(j["arches"], nlohmann::json::array({"sm_80", "sm_90"}));
    EXPECT_EQ(j["misses"], 12);
    EXPECT_EQ(j["hits"], 0);
    EXPECT_EQ(j["errors"], 0);
    EXPECT_TRUE(j["seconds"].is_number());
    auto second = run_command(kiln("warm " + path + " --arch sm_80,sm_90 -j 2 --json"));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(nlohmann::json::parse(second.out)["hits"], 12);
    EXPECT_EQ(nlohmann::json::parse(second.out)["misses"], 0);
    auto stats = run_command(kiln("cache stats --json"));
    EXPECT_EQ(nlohmann::json::parse(stats.out)["entries"], 12) << stats.out;
}

namespace {

// The entries of a cache directory, by file name (shard/key.kiln), with their cubins.
std::map<std::string, std::string> entries_in(const std::filesystem::path& dir) {
    std::map<std::string, std::string> found;
    for (const auto& item : std::filesystem::recursive_directory_iterator(dir)) {
        if (item.path().extension() != ".kiln") continue;
        const auto key = kiln::cache::Key::from_hex(item.path().stem().string());
        if (!key) continue;
        auto decoded = kiln::cache::decode_entry(kiln::test::read_file(item.path()), *key);
        found[item.path().lexically_relative(dir).string()] =
            decoded.entry ? decoded.entry->payload : "damaged";
    }
    return found;
}

} // namespace

TEST_F(WarmCli, WorkerProcessesMakeTheEntriesOneProcessMakes) {
    const auto path = manifest("m.json", good_kernels());
    auto into = [&](const std::string& cache, const std::string& jobs) {
        return run_command("KILN_CACHE_DIR='" + (m_dir / cache).string() +
                           "' " KILN_TOOL_PATH " warm " + path + " --arch sm_80,sm_90 --json " +
                           jobs);
    };
    const auto one = into("seq", "-j 1");
    ASSERT_EQ(one.status, 0) << one.err;
    EXPECT_EQ(nlohmann::json::parse(one.out)["worker_processes"], false);
    const auto three = into("par", "-j 3");
    ASSERT_EQ(three.status, 0) << three.err;
    const auto j = nlohmann::json::parse(three.out);
    EXPECT_EQ(j["worker_processes"], true) << three.out;
    EXPECT_EQ(j["misses"], 12);
    EXPECT_EQ(j["compiles"], 12) << "the workers' compiles are counted";
    const auto threads = into("thr", "-j 2 --threads");
    ASSERT_EQ(threads.status, 0) << threads.err;
    EXPECT_EQ(nlohmann::json::parse(threads.out)["worker_processes"], false);

    const auto expected = entries_in(m_dir / "seq");
    ASSERT_EQ(expected.size(), 12u);
    for (const std::string cache : {"par", "thr"}) {
        auto got = entries_in(m_dir / cache);
        // The line table names the source's path in the cache directory: the same length here.
        for (auto& [name, cubin] : got)
            for (std::size_t at; (at = cubin.find("/" + cache + "/")) != std::string::npos;)
                cubin.replace(at, cache.size() + 2, "/seq/");
        ASSERT_EQ(got.size(), expected.size()) << cache;
        for (const auto& [name, cubin] : expected) {
            ASSERT_EQ(got.count(name), 1u) << cache << ": " << name << " is missing";
            EXPECT_EQ(got.at(name), cubin) << cache << ": " << name;
        }
    }
    // The workers' stores are counted in the directory's statistics.
    const auto stats = run_command("KILN_CACHE_DIR='" + (m_dir / "par").string() +
                                   "' " KILN_TOOL_PATH " cache stats --json");
    EXPECT_EQ(nlohmann::json::parse(stats.out)["stores"], 12) << stats.out;
}

TEST_F(WarmCli, PrintsAOneLineSummary) {
    const auto path = manifest("m.json", good_kernels());
    auto result = run_command(kiln("warm " + path + " --arch sm_90 -j 2"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(result.out.rfind("warmed 6 kernels for sm_90: 0 hits, 6 misses, 0 errors in ", 0), 0u)
        << result.out;
    EXPECT_EQ(result.err, "") << "no progress line when stderr is not a terminal";
}

TEST_F(WarmCli, AWarmedKernelIsAHitForKilnCompile) {
    const auto path = manifest("m.json", good_kernels());
    ASSERT_EQ(run_command(kiln("warm " + path + " --arch sm_90")).status, 0);
    auto compile = run_command(kiln("compile " + (m_dir / "scale.cu").string() +
                                    " --arch sm_90 --name-expr 'scale<float>' --name-expr "
                                    "'scale<double>' -- -DUNUSED=1"));
    ASSERT_EQ(compile.status, 0) << compile.err;
    EXPECT_EQ(compile.out.rfind("hit ", 0), 0u) << compile.out;
}

TEST_F(WarmCli, ABrokenKernelFailsTheCommandButTheOthersAreCached) {
    auto kernels = good_kernels();
    kernels.push_back({{"source", "extern \"C\" __global__ void broken() { nope(); }\n"}});
    const auto path = manifest("m.json", kernels);
    auto result = run_command(kiln("warm " + path + " --arch sm_80,sm_90 -j 2"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("kernel 6 for sm_"), std::string::npos) << result.err;
    // The CompileError (its first line names NVRTC's error, then the log and numbered source)
    // once; the other architecture adds one line.
    const auto log_line = result.err.find("--- NVRTC log ---");
    ASSERT_NE(log_line, std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("--- NVRTC log ---", log_line + 1), std::string::npos) << result.err;
    EXPECT_NE(result.err.rfind("identifier \"nope\" is undefined", log_line), std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("kernel 6 also fails for sm_"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("1 of 7 kernel(s) failed"), std::string::npos) << result.err;
    EXPECT_NE(result.out.find("0 hits, 12 misses, 2 errors"), std::string::npos) << result.out;
    // The good ones were cached regardless.
    auto again = run_command(
        kiln("warm " + manifest("good.json", good_kernels()) + " --arch sm_80,sm_90 --json"));
    ASSERT_EQ(again.status, 0) << again.err;
    EXPECT_EQ(nlohmann::json::parse(again.out)["hits"], 12) << again.out;
}

TEST_F(WarmCli, BadManifestsAreOneLineErrors) {
    kiln::test::write_file(m_dir / "bad.json", "{\"kernels\": [");
    auto parse = run_command(kiln("warm " + (m_dir / "bad.json").string() + " --arch sm_90"));
    EXPECT_EQ(parse.status, 1);
    EXPECT_NE(parse.err.find("is not JSON"), std::string::npos) << parse.err;
    EXPECT_NE(parse.err.find("line 1, column 14"), std::string::npos) << parse.err;
    EXPECT_EQ(std::count(parse.err.begin(), parse.err.end(), '\n'), 1) << parse.err;
    auto missing = run_command(kiln("warm /nonexistent.json --arch sm_90"));
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("cannot read manifest '/nonexistent.json' (no such file)"),
              std::string::npos)
        << missing.err;
    const auto no_list = manifest("nl.json", nullptr);
    auto not_a_list = run_command(kiln("warm " + no_list + " --arch sm_90"));
    EXPECT_EQ(not_a_list.status, 1);
    EXPECT_NE(not_a_list.err.find("needs a \"kernels\" list"), std::string::npos) << not_a_list.err;
    const auto no_file = manifest("nf.json", nlohmann::json::array({{{"file", "absent.cu"}}}));
    auto absent = run_command(kiln("warm " + no_file + " --arch sm_90"));
    EXPECT_EQ(absent.status, 1);
    EXPECT_NE(absent.err.find("kernel 0 (absent.cu)"), std::string::npos) << absent.err;
    EXPECT_NE(absent.err.find("no such file"), std::string::npos) << absent.err;
    const auto neither = manifest("n.json", nlohmann::json::array({{{"options", {"-G"}}}}));
    auto empty_entry = run_command(kiln("warm " + neither + " --arch sm_90"));
    EXPECT_EQ(empty_entry.status, 1);
    EXPECT_NE(empty_entry.err.find("exactly one of"), std::string::npos) << empty_entry.err;
    auto bad_arch = run_command(kiln("warm " + neither + " --arch banana"));
    EXPECT_EQ(bad_arch.status, 1);
}

TEST_F(WarmCli, UnknownFieldsAndEntryKindsAreErrors) {
    const auto typo =
        manifest("t.json", nlohmann::json::array({{{"source", "__global__ void k() {}"},
                                                   {"name_expresions", {"k"}}}}));
    auto result = run_command(kiln("warm " + typo + " --arch sm_90"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("kernel 0: unknown field \"name_expresions\""), std::string::npos)
        << result.err;
    const auto spec =
        manifest("s.json", nlohmann::json::array({{{"elementwise", {{"in", "float32 x"}}}}}));
    auto front_end = run_command(kiln("warm " + spec + " --arch sm_90"));
    EXPECT_EQ(front_end.status, 1);
    EXPECT_NE(front_end.err.find("kernel 0: \"elementwise\": unknown field \"in\" (known: name, "
                                 "in_params, out_params, operation"),
              std::string::npos)
        << front_end.err;
    const auto kind = manifest("k.json", nlohmann::json::array({{{"fusion", {{"ops", "x"}}}}}));
    auto unknown_kind = run_command(kiln("warm " + kind + " --arch sm_90"));
    EXPECT_EQ(unknown_kind.status, 1);
    EXPECT_NE(unknown_kind.err.find("kernel 0: unknown field \"fusion\""), std::string::npos)
        << unknown_kind.err;
}

// Killing `kiln warm` (here with SIGKILL, which it cannot catch) ends its worker processes too:
// none goes on compiling the rest of the manifest.
TEST_F(WarmCli, WorkersDieWithTheCommand) {
    nlohmann::json kernels = nlohmann::json::array();
    for (int i = 0; i < 400; ++i)
        kernels.push_back({{"source", "extern \"C\" __global__ void k(int* p) { *p = " +
                                          std::to_string(i) + "; }\n"}});
    const auto path = manifest("many.json", kernels);
    const std::string script =
        kiln("warm " + path + " --arch sm_90 -j 2") +
        " >/dev/null 2>&1 & p=$!\n"
        "c=''; for i in $(seq 200); do c=$(cat /proc/$p/task/*/children 2>/dev/null); "
        "[ -n \"$c\" ] && break; sleep 0.05; done\n"
        "sleep 0.3; kill -9 $p; sleep 1\n"
        "alive=0; for w in $c; do s=$(awk '{print $3}' /proc/$w/stat 2>/dev/null); "
        "[ -n \"$s\" ] && [ \"$s\" != Z ] && alive=$((alive+1)); done\n"
        "echo \"workers $(echo $c | wc -w) alive $alive\"; kill -9 $c 2>/dev/null; true\n";
    kiln::test::write_file(m_dir / "kill.sh", script);
    const auto result = run_command("sh " + (m_dir / "kill.sh").string());
    EXPECT_EQ(result.out, "workers 2 alive 0\n") << result.err;
}
