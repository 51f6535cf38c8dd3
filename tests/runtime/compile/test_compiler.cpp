#include "compiler_fixture.hpp"

#include "kiln/error.hpp"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using kiln::test::CompilerTest;
using kiln::test::kAddSource;

namespace {
bool is_elf(const std::string& bytes) {
    return bytes.rfind("\x7f"
                       "ELF",
                       0) == 0;
}
bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}
} // namespace

TEST_F(CompilerTest, CompilesACubinForANamedArchitectureWithoutADevice) {
    auto program = m_compiler->compile(kAddSource, for_arch("sm_90"));
    EXPECT_TRUE(is_elf(program->cubin()));
    EXPECT_EQ(program->arch(), "sm_90");
    EXPECT_EQ(program->origin(), kiln::ProgramOrigin::compiled);
    const auto& options = program->options();
    EXPECT_EQ(options.at(0), "-arch=sm_90");
    EXPECT_NE(std::find(options.begin(), options.end(), "-lineinfo"), options.end());
    EXPECT_NE(std::find(options.begin(), options.end(), "-std=c++17"), options.end());
}

TEST_F(CompilerTest, ASecondCompileIsTheSameProgramFromMemory) {
    auto first = m_compiler->compile(kAddSource, for_arch());
    auto second = m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(first.get(), second.get());
}

TEST_F(CompilerTest, ThreadsAskingAtOnceCompileOnce) {
    std::vector<std::shared_ptr<const kiln::Program>> results(8);
    std::vector<std::thread> threads;
    threads.reserve(results.size());
    for (auto& result : results)
        threads.emplace_back(
            [this, &result] { result = m_compiler->compile(kAddSource, for_arch()); });
    for (auto& thread : threads)
        thread.join();
    for (const auto& result : results)
        EXPECT_EQ(result.get(), results[0].get());
    EXPECT_EQ(m_store->local().stats().stores, 1u) << "one compile, so one entry written";
}

TEST_F(CompilerTest, AFreshProcessGetsTheProgramFromDisk) {
    auto compiled = m_compiler->compile(kAddSource, for_arch());
    restart();
    auto loaded = m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(loaded->origin(), kiln::ProgramOrigin::disk_cache);
    EXPECT_EQ(loaded->cubin(), compiled->cubin());
    EXPECT_EQ(loaded->key(), compiled->key());
}

TEST_F(CompilerTest, ARecompileReplacesAnEntryTheDriverRejected) {
    // What Module::load does when the driver rejects a cached cubin, without the driver: the
    // planted entry is well formed, so only the driver could tell it is not a cubin.
    kiln::cache::Entry planted;
    planted.key = m_compiler->key_for(kAddSource, for_arch());
    planted.payload = "\x7f"
                      "ELF, but not a cubin";
    planted.arch = "sm_90";
    ASSERT_TRUE(m_store->store(planted));
    auto bad = m_compiler->compile(kAddSource, for_arch());
    ASSERT_EQ(bad->origin(), kiln::ProgramOrigin::disk_cache);
    ASSERT_EQ(bad->cubin(), planted.payload);
    const auto damaged = m_store->local().stats().damaged;

    auto fresh = m_compiler->recompile(*bad, for_arch());
    EXPECT_EQ(fresh->origin(), kiln::ProgramOrigin::compiled);
    EXPECT_NE(fresh->cubin(), planted.payload);
    EXPECT_EQ(m_store->local().stats().damaged, damaged + 1);
    auto rewritten = m_store->load(planted.key);
    ASSERT_TRUE(rewritten) << "the fresh cubin replaces the rejected entry";
    EXPECT_EQ(rewritten->payload, fresh->cubin());
    EXPECT_EQ(m_compiler->compile(kAddSource, for_arch()).get(), fresh.get())
        << "memory now holds the fresh program";
}

TEST_F(CompilerTest, DiskCacheCanBeSkippedPerCompile) {
    auto options = for_arch();
    options.use_disk_cache = false;
    m_compiler->compile(kAddSource, options);
    EXPECT_EQ(m_store->local().stats().stores, 0u);
}

TEST_F(CompilerTest, ACompileErrorCarriesTheLogOptionsAndNumberedSource) {
    const std::string source = "extern \"C\" __global__ void k() {\n    undeclared = 1;\n}\n";
    try {
        m_compiler->compile(source, for_arch());
        FAIL() << "compiled a program with an undeclared identifier";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(e.log().find("undeclared"), std::string::npos) << e.log();
        EXPECT_EQ(e.source(), source);
        EXPECT_NE(e.numbered_source().find("2 |     undeclared = 1;"), std::string::npos);
        EXPECT_EQ(e.options().at(0), "-arch=sm_90");
        EXPECT_NE(std::string(e.what()).find("2 |     undeclared = 1;"), std::string::npos);
    }
}

TEST_F(CompilerTest, ACompileErrorsFirstLineIsNvrtcsFirstErrorWithItsFileAndLine) {
    const std::string source = "extern \"C\" __global__ void k(int* p) {\n    *p = 1;\n"
                               "    *p = first_undeclared;\n    *p = second_undeclared;\n}\n";
    try {
        m_compiler->compile(source, for_arch());
        FAIL() << "compiled a program with undeclared identifiers";
    } catch (const kiln::CompileError& e) {
        const std::string what = e.what();
        const std::string first = what.substr(0, what.find('\n'));
        EXPECT_TRUE(has(first, "NVRTC could not compile the program: ")) << first;
        EXPECT_TRUE(has(first, "(3): error: identifier \"first_undeclared\" is undefined"))
            << first;
        EXPECT_FALSE(has(first, "second_undeclared")) << "only the first error: " << first;
        EXPECT_EQ(e.first_error().substr(e.first_error().find('(')),
                  "(3): error: identifier \"first_undeclared\" is undefined");
        // The rest is as before: the whole log, the options and the numbered source.
        EXPECT_TRUE(has(what, "second_undeclared")) << what;
        EXPECT_TRUE(has(what, "-arch=sm_90")) << what;
        EXPECT_TRUE(has(what, "4 |     *p = second_undeclared;")) << what;
    }
    // A catastrophic error (a missing header, an #error) is an error too.
    try {
        m_compiler->compile("#include \"kiln_no_such_header.h\"\n", for_arch());
        FAIL() << "compiled a program that includes a missing header";
    } catch (const kiln::CompileError& e) {
        const std::string what = e.what();
        const std::string first = what.substr(0, what.find('\n'));
        EXPECT_TRUE(has(first, "(1): catastrophic error: cannot open source file")) << first;
    }
}

TEST_F(CompilerTest, AFailedCompileIsRetriedNotRemembered) {
    EXPECT_THROW(m_compiler->compile("this is not C++", for_arch()), kiln::CompileError);
    EXPECT_THROW(m_compiler->compile("this is not C++", for_arch()), kiln::CompileError);
    EXPECT_EQ(m_store->local().stats().stores, 0u);
}

TEST_F(CompilerTest, AnOptionNvrtcRejectsIsACompileErrorNamingIt) {
    auto options = for_arch();
    options.options = {"--no-such-option"};
    try {
        m_compiler->compile(kAddSource, options);
        FAIL() << "NVRTC accepted --no-such-option";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("rejected an option"), std::string::npos);
        const std::string what = e.what();
        EXPECT_TRUE(has(what.substr(0, what.find('\n')), "--no-such-option")) << what;
        EXPECT_NE(e.log().find("no-such-option"), std::string::npos) << e.log();
    }
}

TEST_F(CompilerTest, ArchitectureGivenAsAnOptionIsRejectedWithAFix) {
    auto options = for_arch();
    options.options = {"-arch=sm_80"};
    EXPECT_THROW(m_compiler->compile(kAddSource, options), kiln::ArgumentError);
}

TEST_F(CompilerTest, NvrtcGetsKilnsOptionsAndItsOwnCacheOffOutsideTheKey) {
    auto program = m_compiler->compile(kAddSource, for_arch());
    const auto& given = program->nvrtc_options();
    ASSERT_GE(given.size(), program->options().size());
    EXPECT_TRUE(std::equal(program->options().begin(), program->options().end(), given.begin()))
        << "the key's options come first, in order";
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    if (major > 12 || (major == 12 && minor >= 9)) { // NVRTC's own cache exists from 12.9
        EXPECT_EQ(std::count(given.begin(), given.end(), "--no-cache"), 1);
    }
    EXPECT_EQ(std::count(program->options().begin(), program->options().end(), "--no-cache"), 0)
        << "not in the key: entries keep their keys";
    auto own = for_arch();
    own.options = {"--no-cache"};
    auto with_own = m_compiler->compile(kAddSource, own);
    EXPECT_EQ(std::count(with_own->nvrtc_options().begin(), with_own->nvrtc_options().end(),
                         "--no-cache"),
              1)
        << "a user's --no-cache is not given twice";
}

TEST_F(CompilerTest, AProgramSaysWhereItsCompileTimeWent) {
    auto compiled = m_compiler->compile(kAddSource, for_arch());
    EXPECT_GT(compiled->phases().nvrtc_ms, 0.0);
    EXPECT_GT(compiled->phases().store_ms, 0.0) << "the entry was written";
    EXPECT_LE(compiled->phases().lookup_ms + compiled->phases().nvrtc_ms,
              compiled->milliseconds() + 0.01);
    restart();
    auto loaded = m_compiler->compile(kAddSource, for_arch());
    EXPECT_EQ(loaded->phases().nvrtc_ms, 0.0) << "read from disk, not compiled";
    EXPECT_TRUE(loaded->nvrtc_options().empty());
}

TEST_F(CompilerTest, UserOptionsReachNvrtc) {
    const char* source = "#ifndef N\n#error N is not defined\n#endif\n"
                         "extern \"C\" __global__ void k(int* p) { *p = N; }\n";
    EXPECT_THROW(m_compiler->compile(source, for_arch()), kiln::CompileError);
    auto options = for_arch();
    options.options = {"-DN=4"};
    EXPECT_NO_THROW(m_compiler->compile(source, options));
}

TEST_F(CompilerTest, AUserStdReplacesTheDefault) {
    auto options = for_arch();
    options.options = {"-std=c++20"};
    auto program =
        m_compiler->compile("template <class T> concept Small = sizeof(T) < 8;\n"
                            "extern \"C\" __global__ void k(int* p) { *p = Small<int>; }\n",
                            options);
    const auto& o = program->options();
    EXPECT_EQ(std::count(o.begin(), o.end(), "-std=c++17"), 0);
}

TEST_F(CompilerTest, NameExpressionsGiveLoweredNames) {
    auto options = for_arch();
    options.name_expressions = {"scale<float>", "scale<double>"};
    auto program = m_compiler->compile(
        "template <class T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n", options);
    auto f = program->lowered_name("scale<float>");
    auto d = program->lowered_name("scale<double>");
    ASSERT_TRUE(f && d);
    EXPECT_EQ(f->rfind("_Z", 0), 0u) << *f;
    EXPECT_NE(*f, *d);
    EXPECT_FALSE(program->lowered_name("scale<int>"));
    restart();
    auto cached = m_compiler->compile(
        "template <class T> __global__ void scale(T* x, T a) { x[threadIdx.x] *= a; }\n", options);
    EXPECT_EQ(cached->origin(), kiln::ProgramOrigin::disk_cache);
    EXPECT_EQ(cached->lowered_name("scale<float>"), f) << "lowered names survive the disk cache";
}

TEST_F(CompilerTest, InMemoryHeadersAreFound) {
    auto options = for_arch();
    options.headers = {
        {"my/helpers.cuh", "__device__ inline float twice(float v) { return 2 * v; }\n"}};
    EXPECT_NO_THROW(
        m_compiler->compile("#include \"my/helpers.cuh\"\n"
                            "extern \"C\" __global__ void k(float* p) { *p = twice(*p); }\n",
                            options));
}

TEST_F(CompilerTest, ToolkitHeadersAreIncludableByDefault) {
    // cooperative_groups.h and cuda_fp16.h pull in libcu++ (include/cccl since CUDA 13).
    EXPECT_NO_THROW(m_compiler->compile(
        "#include <cooperative_groups.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
        "namespace cg = cooperative_groups;\n"
        "extern \"C\" __global__ void k(__half* p) { cg::this_grid().sync(); *p = "
        "__float2half(1.f); }\n",
        for_arch()));
    auto options = for_arch();
    options.cuda_headers = false;
    EXPECT_THROW(m_compiler->compile("#include <cuda_fp16.h>\n", options), kiln::CompileError);
}

TEST_F(CompilerTest, NoArchitectureAndNoDeviceIsANoDeviceError) {
    if (kiln::Device::available()) GTEST_SKIP() << "a GPU is present: its architecture is used";
    EXPECT_THROW(m_compiler->compile(kAddSource, {}), kiln::NoDeviceError);
}

TEST(NormalizeArch, AcceptsTheUsualSpellings) {
    EXPECT_EQ(kiln::normalize_arch("sm_90"), "sm_90");
    EXPECT_EQ(kiln::normalize_arch("90"), "sm_90");
    EXPECT_EQ(kiln::normalize_arch("compute_80"), "sm_80");
    EXPECT_EQ(kiln::normalize_arch("sm_90a"), "sm_90a");
    EXPECT_EQ(kiln::normalize_arch("sm_100f"), "sm_100f");
}

TEST(NormalizeArch, RejectsAnythingElse) {
    for (const char* bad : {"", "sm_", "sm_9", "gfx90a", "sm_90;rm -rf", "sm_1000"})
        EXPECT_THROW(kiln::normalize_arch(bad), kiln::ArgumentError) << bad;
}

namespace {

kiln::GeneratedKernel generated_add(const char* signature_text = "add v1") {
    return {kiln::cache::KeyBuilder().add("test-signature", signature_text).finish(), "add",
            "sm_90"};
}

} // namespace

// A generated kernel's program: memo, then the caller's full compile (which the memo remembers).
TEST_F(CompilerTest, AGeneratedKernelIsFoundThroughItsMemoWithoutTheFullCompile) {
    int full_compiles = 0;
    const auto full = [&] {
        ++full_compiles;
        return m_compiler->compile(kAddSource, for_arch());
    };
    const auto first = m_compiler->compile(generated_add(), full);
    EXPECT_FALSE(first.from_memo);
    EXPECT_EQ(full_compiles, 1);
    restart(); // a fresh process: nothing in memory, the memo on disk
    const auto again = m_compiler->compile(generated_add(), full);
    EXPECT_TRUE(again.from_memo);
    EXPECT_EQ(full_compiles, 1) << "nothing generated or compiled";
    EXPECT_EQ(again.program->key(), first.program->key());
    EXPECT_EQ(again.program->cubin(), first.program->cubin());
    EXPECT_TRUE(again.program->source().empty());
    EXPECT_EQ(m_compiler->statistics().memo_hits, 1u);
    // Another signature, or the same one naming another kernel, takes the full compile.
    EXPECT_FALSE(m_compiler->compile(generated_add("add v2"), full).from_memo);
    kiln::GeneratedKernel other = generated_add();
    other.kernel = "not_add";
    EXPECT_FALSE(m_compiler->compile(other, full).from_memo);
    EXPECT_EQ(full_compiles, 3);
}

TEST_F(CompilerTest, AGeneratedKernelWithoutASignatureAlwaysTakesTheFullCompile) {
    int full_compiles = 0;
    const auto full = [&] {
        ++full_compiles;
        return m_compiler->compile(kAddSource, for_arch());
    };
    kiln::GeneratedKernel unsigned_kernel = generated_add();
    unsigned_kernel.signature.reset();
    for (int i = 0; i < 2; ++i) {
        restart();
        EXPECT_FALSE(m_compiler->compile(unsigned_kernel, full).from_memo);
    }
    EXPECT_EQ(full_compiles, 2);
}

// The driver rejected what the memo gave: the full compile runs and its program replaces the memo.
TEST_F(CompilerTest, ARejectedMemoProgramIsReplacedByTheFullCompile) {
    const auto add = [&] { return m_compiler->compile(kAddSource, for_arch()); };
    m_compiler->compile(generated_add(), add);
    restart();
    const auto from_memo = m_compiler->compile(generated_add(), add);
    ASSERT_TRUE(from_memo.from_memo);
    bool called = false;
    const auto replaced = m_compiler->compile(
        generated_add(),
        [&] {
            called = true;
            return add();
        },
        from_memo.program.get());
    EXPECT_TRUE(called);
    EXPECT_FALSE(replaced.from_memo);
    EXPECT_FALSE(replaced.program->source().empty()) << "read with its source this time";
}

TEST_F(CompilerTest, ClearingMemoryMakesTheNextCompileReadTheDisk) {
    const auto first = m_compiler->compile(kAddSource, for_arch());
    m_compiler->clear_memory();
    const auto second = m_compiler->compile(kAddSource, for_arch());
    EXPECT_NE(first.get(), second.get());
    EXPECT_EQ(second->origin(), kiln::ProgramOrigin::disk_cache);
    EXPECT_EQ(second->cubin(), first->cubin());
}
