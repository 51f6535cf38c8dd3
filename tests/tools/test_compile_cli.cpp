#include "run_command.hpp"
#include "temp_dir.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/compiler.hpp"
#include "kiln/raw_kernel.hpp"
#include "kiln/version.hpp"

#include <cuda.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include <algorithm>
#include <string>
#include <vector>

using kiln::test::run_command;

namespace {

class CompileCli : public ::testing::Test {
  protected:
    kiln::test::TempDir m_dir;
    std::string kiln(const std::string& args) const {
        return "KILN_CACHE_DIR='" + (m_dir / "cache").string() + "' " KILN_TOOL_PATH " " + args;
    }
    std::string write(const std::string& name, const std::string& text) const {
        kiln::test::write_file(m_dir / name, text);
        return (m_dir / name).string();
    }
};

constexpr const char* kKernel = "extern \"C\" __global__ void k(float* p) {\n#ifdef TWICE\n    *p "
                                "*= 2;\n#endif\n    *p += 1;\n}\n";

} // namespace

TEST_F(CompileCli, MissThenHitOnOneLineEach) {
    const auto file = write("k.cu", kKernel);
    auto first = run_command(kiln("compile " + file + " --arch sm_90"));
    ASSERT_EQ(first.status, 0) << first.err;
    EXPECT_EQ(first.out.rfind("miss ", 0), 0u) << first.out;
    auto second = run_command(kiln("compile " + file + " --arch sm_90"));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(second.out.rfind("hit ", 0), 0u) << second.out;
    // Same key on both lines: "hit|miss KEY MS ms".
    EXPECT_EQ(first.out.substr(5, 32), second.out.substr(4, 32));
    EXPECT_NE(second.out.find(" ms"), std::string::npos);
}

// Processes started together on one new source compile it once between them (compile claims):
// the others report a hit, with the time they waited when they did.
TEST_F(CompileCli, ProcessesStartedTogetherCompileASourceOnce) {
    const auto file = write("k.cu", kKernel);
    constexpr int kProcesses = 6;
    std::string script;
    for (int i = 0; i < kProcesses; ++i)
        script += "(" + kiln("compile " + file + " --arch sm_90 --json") + " > '" +
                  (m_dir / ("out" + std::to_string(i))).string() + "') & ";
    auto all = run_command(script + "wait");
    ASSERT_EQ(all.status, 0) << all.err;
    int misses = 0, hits = 0;
    for (int i = 0; i < kProcesses; ++i) {
        const auto j =
            nlohmann::json::parse(kiln::test::read_file(m_dir / ("out" + std::to_string(i))));
        const bool hit = j.at("cache") == "hit";
        (hit ? hits : misses) += 1;
        if (!hit) EXPECT_FALSE(j.contains("waited_ms")) << j.dump();
        if (j.contains("waited_ms")) EXPECT_GT(j.at("waited_ms").get<double>(), 0.0);
    }
    EXPECT_EQ(misses, 1);
    EXPECT_EQ(hits, kProcesses - 1);
}

TEST_F(CompileCli, ArchTakesTheSameFormsEverywhereAndNamesWhatItRefuses) {
    const auto file = write("k.cu", kKernel);
    auto first = run_command(kiln("compile " + file + " --arch sm_90"));
    ASSERT_EQ(first.status, 0) << first.err;
    for (const char* form : {"90", "9.0"}) {
        auto again = run_command(kiln("compile " + file + " --arch " + form));
        ASSERT_EQ(again.status, 0) << form << ": " << again.err;
        EXPECT_EQ(again.out.rfind("hit " + first.out.substr(5, 32), 0), 0u) << form << again.out;
    }
    // A virtual architecture is not a cubin's: refused, saying what to use.
    auto virtual_arch = run_command(kiln("compile " + file + " --arch compute_90"));
    EXPECT_EQ(virtual_arch.status, 1);
    EXPECT_NE(virtual_arch.err.find("virtual architecture"), std::string::npos) << virtual_arch.err;
    EXPECT_NE(virtual_arch.err.find("--arch sm_90"), std::string::npos) << virtual_arch.err;
    // One NVRTC does not compile for: the list of those it does, not a compile log.
    auto old = run_command(kiln("compile " + file + " --arch sm_12"));
    EXPECT_EQ(old.status, 1);
    EXPECT_NE(old.err.find("does not compile for sm_12; it compiles for sm_"), std::string::npos)
        << old.err;
    EXPECT_NE(old.err.find("sm_90"), std::string::npos) << old.err;
    EXPECT_EQ(old.err.find("__global__"), std::string::npos) << old.err;
    // The same in warm's list.
    const std::string manifest = write("m.json", "{\"kernels\": [{\"file\": \"k.cu\"}]}");
    auto warm = run_command(kiln("warm " + manifest + " --arch sm_90,compute_80"));
    EXPECT_EQ(warm.status, 1);
    EXPECT_NE(warm.err.find("virtual architecture"), std::string::npos) << warm.err;
}

TEST_F(CompileCli, JsonHasKeyCacheMillisecondsAndCubinSize) {
    const auto file = write("k.cu", kKernel);
    auto result = run_command(kiln("compile " + file + " --arch sm_90 --json -- -DTWICE"));
    ASSERT_EQ(result.status, 0) << result.err;
    auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(j.at("key").get<std::string>().size(), 32u);
    EXPECT_EQ(j.at("cache"), "miss");
    EXPECT_GT(j.at("ms").get<double>(), 0.0);
    EXPECT_GT(j.at("cubin_bytes").get<std::size_t>(), 0u);
    const auto options = j.at("options").get<std::vector<std::string>>();
    EXPECT_NE(std::find(options.begin(), options.end(), "-DTWICE"), options.end());
}

// `kiln compile` warms what a RawKernel of the same source and options looks up: one key, NVRTC's
// -minimal front end chosen the same way (added here: the source needs nothing it removes).
TEST_F(CompileCli, StoresUnderTheKeyARawKernelLooksUp) {
    const auto file = write("k.cu", kKernel);
    auto result = run_command(kiln("compile " + file + " --arch sm_90 --json -- -DTWICE"));
    ASSERT_EQ(result.status, 0) << result.err;
    const auto j = nlohmann::json::parse(result.out);
    const auto options = j.at("options").get<std::vector<std::string>>();
    EXPECT_NE(std::find(options.begin(), options.end(), "-minimal"), options.end());
    kiln::CompileOptions raw = kiln::CompileOptions::for_arch("sm_90");
    raw.options = {"-DTWICE"};
    EXPECT_EQ(j.at("key"), kiln::RawModule(kKernel, raw).compile()->key().hex());
}

// A source that includes CuPy's headers compiles as a RawKernel compiles it: with the headers
// Kiln carries, under the key the RawKernel looks up.
TEST_F(CompileCli, CupyHeadersAreThereAsForARawKernel) {
    const std::string source = "#include <cupy/complex.cuh>\n"
                               "extern \"C\" __global__ void k(complex<float>* p) { *p = *p * "
                               "*p; }\n";
    const auto file = write("c.cu", source);
    auto result = run_command(kiln("compile " + file + " --arch sm_90 --json"));
    ASSERT_EQ(result.status, 0) << result.err << result.out;
    const auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(
        j.at("key"),
        kiln::RawModule(source, kiln::CompileOptions::for_arch("sm_90")).compile()->key().hex());
    // Its compile errors name the user's file too, not the cache's copy.
    const auto bad = write("c_bad.cu", "#include <cupy/complex.cuh>\n"
                                       "extern \"C\" __global__ void k() { nope(); }\n");
    auto failed = run_command(kiln("compile " + bad + " --arch sm_90"));
    EXPECT_EQ(failed.status, 1);
    EXPECT_NE(failed.err.find(bad + "(2): error: identifier \"nope\" is undefined"),
              std::string::npos)
        << failed.err;
    EXPECT_EQ(failed.err.find((m_dir / "cache").string()), std::string::npos) << failed.err;
}

TEST_F(CompileCli, NameExpressionsArePrintedWithTheirLoweredNames) {
    const auto file = write("t.cu", "template <int N> __global__ void fill(int* p) { *p = N; }\n");
    auto result = run_command(kiln("compile " + file + " --arch sm_80 --name-expr 'fill<3>'"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_NE(result.out.find("fill<3> -> _Z"), std::string::npos) << result.out;
}

TEST_F(CompileCli, WritesTheCubinWhenAsked) {
    const auto file = write("k.cu", kKernel);
    const auto cubin = (m_dir / "k.cubin").string();
    auto result = run_command(kiln("compile " + file + " --arch sm_90 -o " + cubin));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(kiln::test::read_file(cubin).rfind("\x7f"
                                                 "ELF",
                                                 0),
              0u);
}

TEST_F(CompileCli, ACompileErrorExitsOneWithTheNumberedSourceAndLog) {
    const auto file = write("bad.cu", "extern \"C\" __global__ void k() {\n    nope();\n}\n");
    auto result = run_command(kiln("compile " + file + " --arch sm_90"));
    EXPECT_EQ(result.status, 1);
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_NE(result.err.find("2 |     nope();"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find("identifier \"nope\" is undefined"), std::string::npos) << result.err;
}

TEST_F(CompileCli, BadInputIsAOneLineErrorNotACrash) {
    auto missing = run_command(kiln("compile /nonexistent.cu --arch sm_90"));
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("cannot read"), std::string::npos) << missing.err;
    const auto file = write("k.cu", kKernel);
    auto arch = run_command(kiln("compile " + file + " --arch banana"));
    EXPECT_EQ(arch.status, 1);
    EXPECT_NE(arch.err.find("not a GPU architecture"), std::string::npos) << arch.err;
    auto option = run_command(kiln("compile " + file + " --arch sm_90 -- --bogus-flag"));
    EXPECT_EQ(option.status, 1);
    EXPECT_NE(option.err.find("rejected an option"), std::string::npos) << option.err;
}

TEST_F(CompileCli, HelpAndVersion) {
    auto help = run_command(KILN_TOOL_PATH " --help");
    EXPECT_EQ(help.status, 0);
    EXPECT_NE(help.out.find("compile"), std::string::npos);
    auto version = run_command(KILN_TOOL_PATH " --version");
    EXPECT_EQ(version.status, 0);
    EXPECT_NE(version.out.find("kiln " KILN_VERSION_STRING "\n"), std::string::npos) << version.out;
    EXPECT_NE(version.out.find("cache entry format " +
                               std::to_string(kiln::cache::kEntryFormatVersion) + "\n"),
              std::string::npos)
        << version.out;
    EXPECT_NE(version.out.find("built against CUDA " + std::to_string(CUDA_VERSION / 1000) + "."),
              std::string::npos)
        << version.out;
    EXPECT_NE(version.out.find("running NVRTC " + kiln::nvrtc_version()), std::string::npos)
        << version.out;
}

TEST_F(CompileCli, WithoutADriverAndWithoutArchItSaysToPassArch) {
    const auto file = write("k.cu", kKernel);
    auto result =
        run_command("KILN_DRIVER_LIBRARY=libkiln-no-such-driver.so.1 " + kiln("compile " + file));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find("--arch sm_90"), std::string::npos) << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
}

TEST_F(CompileCli, ADirectoryOrMissingFileIsNamedAsSuch) {
    auto directory = run_command(kiln("compile " + m_dir.path().string() + " --arch sm_90"));
    EXPECT_EQ(directory.status, 1);
    EXPECT_NE(directory.err.find("'" + m_dir.path().string() + "' (a directory)"),
              std::string::npos)
        << directory.err;
    EXPECT_EQ(directory.err.find("unexpected"), std::string::npos) << directory.err;
    auto missing = run_command(kiln("compile " + (m_dir / "absent.cu").string() + " --arch sm_90"));
    EXPECT_EQ(missing.status, 1);
    EXPECT_NE(missing.err.find("(no such file)"), std::string::npos) << missing.err;
}

TEST_F(CompileCli, CompileErrorsNameTheUsersFileAndLineNotTheCachePath) {
    const auto file = write("bad.cu", "extern \"C\" __global__ void k() {\n    nope();\n}\n");
    auto result = run_command(kiln("compile " + file + " --arch sm_90"));
    EXPECT_EQ(result.status, 1);
    EXPECT_NE(result.err.find(file + "(2): error: identifier \"nope\" is undefined"),
              std::string::npos)
        << result.err;
    EXPECT_EQ(result.err.find((m_dir / "cache").string()), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("kiln_"), std::string::npos) << result.err;

    auto json = run_command(kiln("compile " + file + " --arch sm_90 --json"));
    EXPECT_EQ(json.status, 1);
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j.at("kind"), "compile");
    EXPECT_EQ(j.at("file"), file);
    EXPECT_NE(j.at("error").get<std::string>().find(file), std::string::npos) << j.dump();
    EXPECT_NE(j.at("log").get<std::string>().find(file + "(2)"), std::string::npos) << j.dump();
    ASSERT_EQ(j.at("diagnostics").size(), 1u) << j.dump();
    EXPECT_EQ(j.at("diagnostics")[0].at("line"), 2);
    EXPECT_EQ(j.at("diagnostics")[0].at("severity"), "error");
    EXPECT_EQ(j.at("diagnostics")[0].at("file"), file);
}

TEST_F(CompileCli, OtherErrorsUnderJsonAreJsonToo) {
    auto result = run_command(kiln("compile " + (m_dir / "absent.cu").string() + " --json"));
    EXPECT_EQ(result.status, 1);
    const auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(j.at("kind"), "argument");
    EXPECT_NE(j.at("error").get<std::string>().find("no such file"), std::string::npos);
}

TEST_F(CompileCli, UsageErrorsExitTwoWithAHint) {
    for (const char* args : {"compile", "compile a.cu --bogus", "frobnicate", ""}) {
        auto result = run_command(kiln(args));
        EXPECT_EQ(result.status, 2) << args << ": " << result.err;
        EXPECT_EQ(result.err.rfind("kiln: ", 0), 0u) << result.err;
        EXPECT_NE(result.err.find("--help' for usage"), std::string::npos) << result.err;
        EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 2) << result.err;
    }
    auto sub = run_command(kiln("compile a.cu --bogus"));
    EXPECT_NE(sub.err.find("Run 'kiln compile --help'"), std::string::npos) << sub.err;
}

TEST_F(CompileCli, AnUnparsableEnvironmentValueFailsEveryCommand) {
    const auto file = write("k.cu", kKernel);
    for (const std::string variable :
         {"KILN_LOG_LEVEL=xyz", "KILN_LINEINFO=maybe", "KILN_CACHE_SHARED=group",
          "KILN_CONTEXT_WARM_UP=sometimes"}) {
        for (const std::string& args :
             std::vector<std::string>{"compile " + file + " --arch sm_90", "cache dir"}) {
            auto result = run_command(variable + " " + kiln(args));
            EXPECT_EQ(result.status, 1) << variable << " " << args;
            const std::string name = variable.substr(0, variable.find('='));
            EXPECT_EQ(result.err.rfind("kiln: " + name + "=", 0), 0u) << result.err;
        }
    }
    auto help = run_command("KILN_LOG_LEVEL=xyz " + kiln("--help"));
    EXPECT_EQ(help.status, 0) << "help is still there to read";
}

TEST_F(CompileCli, LinksDeviceLibrariesIntoRelocatableCode) {
    // A device library as portable PTX, made with NVRTC as nvcc -dc -ptx would.
    nvrtcProgram library = nullptr;
    ASSERT_EQ(nvrtcCreateProgram(&library,
                                 "extern \"C\" __device__ int helper(int x) { return x + 1; }",
                                 "helper.cu", 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    const char* library_options[] = {"-arch=compute_75", "-dc"};
    ASSERT_EQ(nvrtcCompileProgram(library, 2, library_options), NVRTC_SUCCESS);
    std::size_t size = 0;
    nvrtcGetPTXSize(library, &size);
    std::string ptx(size, '\0');
    nvrtcGetPTX(library, ptx.data());
    nvrtcDestroyProgram(&library);
    ptx.resize(ptx.find('\0'));
    const auto helper = write("helper.ptx", ptx);
    const std::string source = "extern \"C\" __device__ int helper(int x);\n"
                               "extern \"C\" __global__ void k(int* p) { *p = helper(*p); }\n";
    const auto file = write("uses.cu", source);

    auto linked =
        run_command(kiln("compile " + file + " --arch sm_90 --link " + helper + " --json -- -dc"));
    ASSERT_EQ(linked.status, 0) << linked.err;
    kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
    options.options = {"-dc"};
    options.link_inputs = {kiln::LinkInput::from_file(helper)};
    EXPECT_EQ(nlohmann::json::parse(linked.out).at("key"),
              kiln::Compiler(nullptr).key_for(source, options).hex());

    auto unresolved = run_command(kiln("compile " + file + " --arch sm_90 -- -dc"));
    EXPECT_NE(unresolved.status, 0);
    EXPECT_NE(unresolved.err.find("nvJitLink"), std::string::npos) << unresolved.err;
    const auto notes = write("notes.txt", "not device code");
    auto bad = run_command(kiln("compile " + file + " --arch sm_90 --link " + notes + " -- -dc"));
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.err.find("notes.txt"), std::string::npos) << bad.err;
}

// NVRTC's log quotes a source's bytes, valid UTF-8 or not: --json still prints one parseable
// object (the bytes replaced) instead of aborting.
TEST_F(CompileCli, JsonSurvivesALogThatIsNotUtf8) {
    const auto bad = (m_dir / "bad.cu").string();
    kiln::test::write_file(bad, "@\xe9\n");
    auto result = run_command(kiln("compile " + bad + " --arch sm_90 --json"));
    EXPECT_EQ(result.status, 1) << result.err;
    const auto j = nlohmann::json::parse(result.out);
    EXPECT_EQ(j.at("kind"), "compile");
    EXPECT_NE(j.at("log").get<std::string>().find("\xef\xbf\xbd"), std::string::npos) << result.out;
}

// A "file" with no end (/dev/zero reports no size) is refused once it passes 64 MiB, not read
// until memory runs out; so is a manifest.
TEST_F(CompileCli, AnEndlessFileIsRefusedNotReadForever) {
    // Memory capped, so that a Kiln that reads on fails fast instead of filling the machine: the
    // address space, or under a sanitizer (whose shadow memory needs terabytes of address space)
    // the resident size, which the sanitizer runtime enforces.
    const std::string cap = "if [ -n \"${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}\" ]; then "
                            "export ASAN_OPTIONS=\"${ASAN_OPTIONS:-}:hard_rss_limit_mb=4000\" "
                            "TSAN_OPTIONS=\"${TSAN_OPTIONS:-}:hard_rss_limit_mb=4000\"; "
                            "else ulimit -v 4000000; fi; ";
    auto result = run_command(cap + kiln("compile /dev/zero --arch sm_90"));
    EXPECT_EQ(result.status, 1) << result.err;
    EXPECT_NE(result.err.find("larger than 64 MiB"), std::string::npos) << result.err;
    auto warm = run_command(cap + kiln("warm /dev/zero --arch sm_90"));
    EXPECT_EQ(warm.status, 1) << warm.err;
    EXPECT_NE(warm.err.find("larger than 64 MiB"), std::string::npos) << warm.err;
}
