// Relocatable device code (-dc, -rdc=true): linked by nvJitLink with the device runtime and the
// caller's link inputs, without a GPU; the key covers every link input and the entry records them.

#include "compiler_fixture.hpp"

#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

using kiln::CompileOptions;
using kiln::LinkInput;
using kiln::test::CompilerTest;

namespace {

// A parent kernel that launches a child kernel per block (dynamic parallelism).
constexpr const char* kParentChild = R"(
extern "C" __global__ void child(int* out, int base) { out[base + threadIdx.x] = base + threadIdx.x; }
extern "C" __global__ void parent(int* out) {
    if (threadIdx.x == 0) child<<<1, 32>>>(out, blockIdx.x * 32);
}
)";

// A kernel that calls a device function defined in a separate library.
constexpr const char* kUsesHelper = R"(
extern "C" __device__ int helper(int x);
extern "C" __global__ void use_helper(int* out) { out[threadIdx.x] = helper(threadIdx.x); }
)";
constexpr const char* kHelper = R"(
extern "C" __device__ int helper(int x) { return 3 * x + HELPER_OFFSET; }
)";

CompileOptions rdc(std::vector<std::string> options = {"-dc"}, const char* arch = "sm_90") {
    CompileOptions o = CompileOptions::for_arch(arch);
    o.options = std::move(options);
    return o;
}

std::vector<std::string> kernels_of(const std::string& cubin) {
    return kiln::cache::cubin_kernel_names(cubin).value_or(std::vector<std::string>{});
}

bool has(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

// A device library as a toolchain outside Kiln makes it (nvcc -dc): NVRTC's relocatable cubin, or
// LTO-IR with -dlto, not linked.
std::string relocatable_object(const char* source, std::vector<std::string> options) {
    nvrtcProgram program = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&program, source, "helper.cu", 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    options.insert(options.begin(), {"-arch=sm_90", "-dc"});
    std::vector<const char*> pointers;
    pointers.reserve(options.size());
    for (const auto& option : options)
        pointers.push_back(option.c_str());
    EXPECT_EQ(nvrtcCompileProgram(program, static_cast<int>(pointers.size()), pointers.data()),
              NVRTC_SUCCESS);
    const bool lto = std::find(options.begin(), options.end(), "-dlto") != options.end();
    std::size_t size = 0;
    std::string bytes;
    if (lto) {
        nvrtcGetLTOIRSize(program, &size);
        bytes.resize(size);
        nvrtcGetLTOIR(program, bytes.data());
    } else {
        nvrtcGetCUBINSize(program, &size);
        bytes.resize(size);
        nvrtcGetCUBIN(program, bytes.data());
    }
    nvrtcDestroyProgram(&program);
    return bytes;
}

// Portable PTX of a device library, which links for every architecture from compute_75 on.
std::string library_ptx(const char* source) {
    nvrtcProgram program = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&program, source, "helper.cu", 0, nullptr, nullptr),
              NVRTC_SUCCESS);
    const char* options[] = {"-arch=compute_75", "-dc", "-DHELPER_OFFSET=5"};
    EXPECT_EQ(nvrtcCompileProgram(program, 3, options), NVRTC_SUCCESS);
    std::size_t size = 0;
    nvrtcGetPTXSize(program, &size);
    std::string ptx(size, '\0');
    nvrtcGetPTX(program, ptx.data());
    nvrtcDestroyProgram(&program);
    if (!ptx.empty() && ptx.back() == '\0') ptx.pop_back();
    return ptx;
}

// ELF e_type: 1 relocatable, 2 executable.
int elf_type(const std::string& cubin) {
    return cubin.size() > 17 ? static_cast<unsigned char>(cubin[16]) : -1;
}

} // namespace

TEST_F(CompilerTest, ARelocatableProgramIsLinkedWithTheDeviceRuntime) {
    const auto program = m_compiler->compile(kParentChild, rdc());
    EXPECT_EQ(elf_type(program->cubin()), 2) << "an executable cubin, not a relocatable one";
    const auto kernels = kernels_of(program->cubin());
    EXPECT_TRUE(has(kernels, "parent"));
    EXPECT_TRUE(has(kernels, "child"));

    const auto entry = m_store->local().peek(program->key());
    ASSERT_TRUE(entry && entry->recipe);
    ASSERT_EQ(entry->link_inputs.size(), 1u);
    EXPECT_EQ(entry->link_inputs[0].name, "libcudadevrt.a");
    EXPECT_EQ(entry->link_inputs[0].kind, kiln::cache::LinkInputKind::library);
    EXPECT_TRUE(entry->link_inputs[0].key) << "recorded by content hash, not stored";
    EXPECT_TRUE(entry->link_inputs[0].bytes.empty());
    EXPECT_TRUE(has(entry->kernel_names, "child"));

    restart();
    const auto again = m_compiler->compile(kParentChild, rdc());
    EXPECT_EQ(again->origin(), kiln::ProgramOrigin::disk_cache);
    EXPECT_EQ(again->cubin(), program->cubin());
}

TEST_F(CompilerTest, EverySpellingOfRelocatableDeviceCodeLinks) {
    for (const auto& options :
         std::vector<std::vector<std::string>>{{"-dc"},
                                               {"--device-c"},
                                               {"-rdc=true"},
                                               {"--relocatable-device-code=true"},
                                               {"-rdc=true", "-dlto"},
                                               {"-rdc", "true"},
                                               {"--relocatable-device-code", "true"},
                                               {"-rdc=false", "-rdc=true"}}) {
        SCOPED_TRACE(options.front());
        const auto program = m_compiler->compile(kParentChild, rdc(options));
        EXPECT_EQ(elf_type(program->cubin()), 2);
        EXPECT_TRUE(has(kernels_of(program->cubin()), "child"));
    }
}

TEST_F(CompilerTest, ADeviceSideLaunchWithoutRelocatableCodeIsACompileErrorWithNvrtcsLog) {
    for (const auto& options : std::vector<std::vector<std::string>>{
             {}, {"-rdc=true", "-rdc=false"}, {"-rdc", "false"}}) {
        try {
            m_compiler->compile(kParentChild, rdc(options));
            FAIL() << "compiled a device-side launch without -dc";
        } catch (const kiln::CompileError& e) {
            EXPECT_NE(e.log().find("device-side kernel launch"), std::string::npos) << e.log();
        }
    }
}

TEST_F(CompilerTest, TheKeyOfRelocatableCodeCoversEveryLinkInput) {
    const auto helper_a = relocatable_object(kHelper, {"-DHELPER_OFFSET=1"});
    const auto helper_b = relocatable_object(kHelper, {"-DHELPER_OFFSET=2"});
    CompileOptions a = rdc();
    a.link_inputs = {LinkInput::from_bytes("helper.cubin", helper_a)};
    CompileOptions b = rdc();
    b.link_inputs = {LinkInput::from_bytes("helper.cubin", helper_b)};
    CompileOptions renamed = a;
    renamed.link_inputs[0].name = "other_name.cubin";
    CompileOptions twice = a;
    twice.link_inputs.push_back(twice.link_inputs[0]);

    const auto key_a = m_compiler->key_for(kUsesHelper, a);
    EXPECT_NE(key_a, m_compiler->key_for(kUsesHelper, b)) << "the input's bytes are keyed";
    EXPECT_NE(key_a, m_compiler->key_for(kUsesHelper, twice));
    EXPECT_NE(key_a, m_compiler->key_for(kUsesHelper, rdc()));
    EXPECT_EQ(key_a, m_compiler->key_for(kUsesHelper, renamed)) << "a name is only a label";
    // Relocatable and whole-program compiles of one source are different programs.
    EXPECT_NE(m_compiler->key_for(kHelper, rdc({"-dc", "-DHELPER_OFFSET=1"})),
              m_compiler->key_for(kHelper, rdc({"-DHELPER_OFFSET=1"})));
}

TEST_F(CompilerTest, UserLinkInputsAreLinkedRecordedAndReplayed) {
    const auto helper = relocatable_object(kHelper, {"-DHELPER_OFFSET=7"});
    const LinkInput input = LinkInput::from_bytes("helper.cubin", helper);
    EXPECT_EQ(input.kind, kiln::cache::LinkInputKind::cubin);
    CompileOptions options = rdc();
    options.link_inputs = {input};
    const auto program = m_compiler->compile(kUsesHelper, options);
    EXPECT_TRUE(has(kernels_of(program->cubin()), "use_helper"));

    const auto entry = m_store->local().peek(program->key());
    ASSERT_TRUE(entry && entry->recipe);
    ASSERT_EQ(entry->link_inputs.size(), 2u);
    EXPECT_EQ(entry->link_inputs[0].name, "helper.cubin");
    EXPECT_EQ(entry->link_inputs[0].bytes, helper);
    EXPECT_EQ(entry->link_inputs[1].name, "libcudadevrt.a");

    // Replayed from the entry alone, as `kiln warm --from-cache` does: the application's key.
    const CompileOptions replay = kiln::options_from_entry(*entry, "sm_90");
    ASSERT_EQ(replay.link_inputs.size(), 1u);
    EXPECT_EQ(m_compiler->key_for(entry->recipe->source, replay), program->key());
    const auto reproduced = m_compiler->reproduce(*entry->recipe, "sm_90", entry->link_inputs);
    EXPECT_EQ(reproduced->key(), program->key());
    EXPECT_EQ(reproduced->cubin(), program->cubin());
}

TEST_F(CompilerTest, LtoIrLinkInputsLinkWithLtoPrograms) {
    const auto helper = relocatable_object(kHelper, {"-dlto", "-DHELPER_OFFSET=1"});
    const LinkInput input = LinkInput::from_bytes("helper.ltoir", helper);
    EXPECT_EQ(input.kind, kiln::cache::LinkInputKind::ltoir);
    CompileOptions options = rdc({"-dc", "-dlto"});
    options.link_inputs = {input};
    EXPECT_TRUE(has(kernels_of(m_compiler->compile(kUsesHelper, options)->cubin()), "use_helper"));
}

TEST_F(CompilerTest, AnUndefinedDeviceFunctionIsACompileErrorWithTheLinkersLog) {
    try {
        m_compiler->compile(kUsesHelper, rdc());
        FAIL() << "linked without the helper";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("nvJitLink could not link"), std::string::npos)
            << e.what();
        EXPECT_NE(e.log().find("helper"), std::string::npos) << e.log();
    }
}

TEST_F(CompilerTest, BadLinkInputsAreClearErrors) {
    EXPECT_THROW(LinkInput::from_bytes("notes.txt", "just some text"), kiln::ArgumentError);
    EXPECT_THROW(LinkInput::from_bytes("empty.a", ""), kiln::ArgumentError);
    EXPECT_THROW(LinkInput::from_file(m_dir.path() / "missing.a"), kiln::ArgumentError);
    try {
        LinkInput::from_bytes("notes.txt", "just some text");
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("notes.txt"), std::string::npos) << e.what();
    }

    // Link inputs need relocatable device code.
    const auto helper = relocatable_object(kHelper, {"-DHELPER_OFFSET=1"});
    CompileOptions whole_program = rdc({});
    whole_program.link_inputs = {LinkInput::from_bytes("helper.cubin", helper)};
    EXPECT_THROW(m_compiler->compile(kUsesHelper, whole_program), kiln::ArgumentError);

    // A malformed archive is refused before nvJitLink sees it (nvJitLink reads freed memory on
    // some), naming the input and what is wrong.
    for (const char* junk :
         {"!<arch>\nnot really an archive", "!<arch>\n",
          "!<arch>\nhelper.o/       0           0     0     644     99999     `\n"}) {
        try {
            LinkInput::from_bytes("junk.a", junk);
            ADD_FAILURE() << "took a broken archive: " << junk;
        } catch (const kiln::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("'junk.a' is not a valid static library"),
                      std::string::npos)
                << e.what();
        }
    }
    // A well-formed archive without device code gives the linker nothing: the function the
    // program needs from it is undefined.
    CompileOptions junk = rdc();
    junk.link_inputs = {LinkInput::from_bytes(
        "junk.a", "!<arch>\nnotes.txt/      0           0     0     644     4         `\nabcd")};
    try {
        m_compiler->compile(kUsesHelper, junk);
        FAIL() << "linked an archive of text";
    } catch (const kiln::CompileError& e) {
        EXPECT_NE(std::string(e.what()).find("Undefined reference to 'helper'"), std::string::npos)
            << e.what();
    }
}

TEST_F(CompilerTest, ALinkInputFileIsReadWithItsKind) {
    const auto helper = relocatable_object(kHelper, {"-DHELPER_OFFSET=1"});
    const auto path = m_dir.path() / "helper.cubin";
    std::ofstream(path, std::ios::binary) << helper;
    const LinkInput input = LinkInput::from_file(path);
    EXPECT_EQ(input.name, "helper.cubin");
    EXPECT_EQ(input.bytes, helper);
    EXPECT_EQ(input.kind, kiln::cache::LinkInputKind::cubin);
}

TEST_F(CompilerTest, PtxLinkInputsLinkForEveryArchitecture) {
    const LinkInput input = LinkInput::from_bytes("helper.ptx", library_ptx(kHelper));
    EXPECT_EQ(input.kind, kiln::cache::LinkInputKind::ptx);
    for (const char* arch : {"sm_80", "sm_90"}) {
        CompileOptions options = rdc({"-dc"}, arch);
        options.link_inputs = {input};
        EXPECT_TRUE(
            has(kernels_of(m_compiler->compile(kUsesHelper, options)->cubin()), "use_helper"))
            << arch;
    }
}
