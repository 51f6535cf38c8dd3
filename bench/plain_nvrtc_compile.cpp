// plain_nvrtc_compile FILE OUT [NVRTC options...]: what `kiln compile` does with no Kiln around it,
// one process, one NVRTC program: read FILE, compile it with the options, write the cubin to OUT.
// bench/cli_startup.sh runs it beside a cold `kiln compile` of the same file with the same options.

#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: plain_nvrtc_compile FILE OUT [NVRTC options...]\n");
        return 2;
    }
    std::ifstream in(argv[1], std::ios::binary);
    const std::string source(std::istreambuf_iterator<char>(in), {});
    nvrtcProgram program = nullptr;
    if (nvrtcCreateProgram(&program, source.c_str(), argv[1], 0, nullptr, nullptr) != NVRTC_SUCCESS)
        return 1;
    const std::vector<const char*> options(argv + 3, argv + argc);
    const nvrtcResult result =
        nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
    std::size_t size = 0;
    if (result != NVRTC_SUCCESS || nvrtcGetCUBINSize(program, &size) != NVRTC_SUCCESS) {
        std::size_t log_size = 0;
        nvrtcGetProgramLogSize(program, &log_size);
        std::string log(log_size, '\0');
        nvrtcGetProgramLog(program, log.data());
        std::fprintf(stderr, "%s: %s\n%s", argv[1], nvrtcGetErrorString(result), log.c_str());
        return 1;
    }
    std::string cubin(size, '\0');
    nvrtcGetCUBIN(program, cubin.data());
    nvrtcDestroyProgram(&program);
    std::ofstream out(argv[2], std::ios::binary);
    out.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    return out ? 0 : 1;
}
