// What the head of Kiln's generated source costs NVRTC, beside a plain NVRTC compile of a trivial
// kernel in the same process (issue 16, item 2): each of Kiln's device headers and the toolkit
// headers the head may include, then a generated elementwise and reduction kernel whole, with
// only their head (no kernel), and without -lineinfo. Times are the compiling thread's CPU time
// (NVRTC compiles on the calling thread), so other load on the machine barely moves them; the
// median and the minimum of several compiles with NVRTC's own cache off (--no-cache).
//
//   bench_generated_headers [repeats]      (no GPU needed)
//   bench_generated_headers --print        (the generated sources measured)
//   bench_generated_headers --files F...   (sources of one's own, e.g. variants of those)

#include "device_headers.hpp"
#include "kiln/kiln.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

namespace {

double thread_ms() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// One NVRTC compile of @p source with Kiln's options and, with @p kiln_headers, its headers.
double compile_ms(const std::string& source, bool kiln_headers, bool lineinfo = true) {
    std::vector<const char*> names, contents;
    if (kiln_headers)
        for (const kiln::Header& h : kiln::detail::device_headers()) {
            names.push_back(h.name.c_str());
            contents.push_back(h.source.c_str());
        }
    const std::string include = std::string("-I") + KILN_BENCH_CUDA_INCLUDE;
    const std::string cccl = include + "/cccl";
    std::vector<const char*> options = {"-arch=sm_90", "-std=c++17", "--no-cache", include.c_str(),
                                        cccl.c_str()};
    if (lineinfo) options.push_back("-lineinfo");
    const double start = thread_ms();
    nvrtcProgram program = nullptr;
    nvrtcCreateProgram(&program, source.c_str(), "bench.cu", static_cast<int>(names.size()),
                       contents.data(), names.data());
    const nvrtcResult result =
        nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
    std::size_t cubin = 0;
    nvrtcGetCUBINSize(program, &cubin);
    const double ms = thread_ms() - start;
    if (result != NVRTC_SUCCESS) {
        std::size_t size = 0;
        nvrtcGetProgramLogSize(program, &size);
        std::string log(size, '\0');
        nvrtcGetProgramLog(program, log.data());
        std::fprintf(stderr, "compile failed:\n%s\n", log.c_str());
        std::exit(1);
    }
    nvrtcDestroyProgram(&program);
    return ms;
}

int g_repeats = 9;

struct Row {
    std::string what, source;
    bool kiln_headers = true, lineinfo = true;
    std::vector<double> times;
};

// Every row once per round, round after round, so that drift in the machine's speed (other
// load, clock changes) spreads over all rows alike.
void run(std::vector<Row>& rows) {
    for (int k = 0; k < g_repeats; ++k)
        for (Row& r : rows)
            r.times.push_back(compile_ms(r.source, r.kiln_headers, r.lineinfo));
    std::printf("| source (CPU ms of the compiling thread) | median | min |\n");
    std::printf("| --- | --- | --- |\n");
    for (Row& r : rows) {
        std::sort(r.times.begin(), r.times.end());
        std::printf("| %-52s | %8.1f | %8.1f |\n", r.what.c_str(), r.times[r.times.size() / 2],
                    r.times[0]);
    }
}

Row make_row(std::string what, std::string source, bool kiln_headers = true, bool lineinfo = true) {
    Row r;
    r.what = std::move(what);
    r.source = std::move(source);
    r.kiln_headers = kiln_headers;
    r.lineinfo = lineinfo;
    return r;
}

std::string head_only(const std::string& source) {
    return source.substr(0, source.find("extern \"C\""));
}

} // namespace

// Each file's source, with Kiln's headers, timed as the rows above (for trying variants).
int time_files(int argc, char** argv) {
    std::vector<Row> rows;
    for (int i = 2; i < argc; ++i) {
        std::FILE* f = std::fopen(argv[i], "rb");
        if (!f) {
            std::fprintf(stderr, "cannot read %s\n", argv[i]);
            return 1;
        }
        std::string text;
        char buffer[4096];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;)
            text.append(buffer, n);
        std::fclose(f);
        rows.push_back(make_row(argv[i], text));
    }
    compile_ms("extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n", false);
    run(rows);
    return 0;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--files") return time_files(argc, argv);
    const bool print = argc > 1 && std::string(argv[1]) == "--print";
    if (argc > 1 && !print) g_repeats = std::max(1, std::atoi(argv[1]));
    const std::string trivial =
        "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n";
    std::printf("first NVRTC compile in the process (trivial kernel): %.1f ms\n\n",
                compile_ms(trivial, false));

    using kiln::Array;
    using kiln::DType;
    const Array x = Array::wrap(CUdeviceptr{1} << 32, {1 << 20}, DType::float32);
    const Array y = Array::wrap(CUdeviceptr{1} << 33, {1 << 20}, DType::float32);
    const kiln::Arg fma_args[] = {x, y, 2.0f};
    const kiln::ElementwiseKernel fma("T x, T y, T b", "T z", "z = x * y + b", "fma3");
    const std::string elementwise = fma.source_for(fma_args, 3);
    const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                       "l2norm");
    const kiln::Arg l2_args[] = {x};
    const std::string reduction = l2norm.source_for(l2_args, 1);
    if (print) {
        std::printf("%s\n%s", elementwise.c_str(), reduction.c_str());
        return 0;
    }

    std::vector<Row> rows;
    rows.push_back(make_row("trivial kernel", trivial, false));
    rows.push_back(make_row("trivial kernel, Kiln's headers given, none included", trivial));
    for (const char* header : {"kiln/prelude.cuh", "kiln/elementwise.cuh", "kiln/reduction.cuh",
                               "kiln/cast.cuh", "kiln/complex.cuh"})
        rows.push_back(make_row("trivial kernel + " + std::string(header),
                                "#include \"" + std::string(header) + "\"\n" + trivial));
    rows.push_back(make_row("trivial kernel + cuda_fp16.h + cuda_bf16.h",
                            "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + trivial, false));
    rows.push_back(
        make_row("trivial kernel + <cuda/std/bit>", "#include <cuda/std/bit>\n" + trivial, false));
    rows.push_back(make_row("elementwise fma3 (float32, flat, vec 4)", elementwise));
    rows.push_back(make_row("  its head only (headers, typedefs, params)", head_only(elementwise)));
    rows.push_back(make_row("  without -lineinfo", elementwise, true, false));
    rows.push_back(make_row("reduction l2norm (float32, all axes)", reduction));
    rows.push_back(make_row("  its head only (headers, functions, params)", head_only(reduction)));
    rows.push_back(make_row("  without -lineinfo", reduction, true, false));
    run(rows);
    return 0;
}
