// What the head of Kiln's generated source costs NVRTC, beside a plain NVRTC compile of a trivial
// kernel in the same process (issue 16, item 2): each of Kiln's device headers and the toolkit
// headers the head may include, then a generated elementwise and reduction kernel whole, with
// only their head (no kernel), and without -lineinfo. Times are the compiling thread's CPU time
// (NVRTC compiles on the calling thread), so other load on the machine barely moves them; the
// median and the minimum of several compiles with NVRTC's own cache off (--no-cache).
//
//   bench_generated_headers [repeats] [--phases]   (no GPU needed)
//   bench_generated_headers --print                (the generated sources measured)
//   bench_generated_headers --files F...           (sources of one's own, e.g. variants of those)
//
// --phases adds where NVRTC spent each compile, from its own `--time` report (medians, wall ms):
// the C++ front end, the NVVM optimizer and the PTX-to-SASS translation (ptxas), and each row's
// total beside the trivial kernel's.

#include "core/device_headers.hpp"
#include "kiln/kiln.hpp"

#include <nvrtc.h>

#include <unistd.h>

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

// NVRTC's own report of one compile: milliseconds in its front end, optimizer and ptxas.
struct Phases {
    double front_end = 0, optimizer = 0, ptxas = 0;
};

bool g_phases = false;

// Reads NVRTC's `--time` CSV ("file, phase name, metric, unit" rows) into @p out.
void read_phases(const std::string& path, Phases& out) {
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (!f) return;
    char line[512];
    while (std::fgets(line, sizeof line, f)) {
        const std::string row = line;
        const std::size_t first = row.find(", "), second = row.find(", ", first + 2);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string phase = row.substr(first + 2, second - first - 2);
        const double ms = std::atof(row.c_str() + second + 2);
        if (phase.rfind("CUDA C++ Front", 0) == 0)
            out.front_end += ms;
        else if (phase.rfind("NVVM", 0) == 0)
            out.optimizer += ms;
        else if (phase.rfind("PTX", 0) == 0)
            out.ptxas += ms;
    }
    std::fclose(f);
}

// One NVRTC compile of @p source with Kiln's options and, with @p kiln_headers, its headers;
// with @p phases, NVRTC's own report of it too.
double compile_ms(const std::string& source, bool kiln_headers, bool lineinfo = true,
                  Phases* phases = nullptr) {
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
    // NVRTC writes its report to a file it names: one made here first (mkstemp: a fresh name
    // only this process opened, mode 0600), read back and removed after the compile.
    std::string time_option, time_file;
    if (phases) {
        const char* tmp = std::getenv("TMPDIR");
        std::string name = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-nvrtc-time-XXXXXX";
        const int fd = ::mkstemp(name.data());
        if (fd >= 0) {
            ::close(fd);
            time_file = name;
            time_option = "--time=" + time_file;
            options.push_back(time_option.c_str());
        }
    }
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
    if (!time_file.empty()) {
        read_phases(time_file, *phases);
        ::unlink(time_file.c_str());
    }
    return ms;
}

int g_repeats = 9;

struct Row {
    std::string what, source;
    bool kiln_headers = true, lineinfo = true;
    std::vector<double> times, front_end, optimizer, ptxas;
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

// Every row once per round, round after round, so that drift in the machine's speed (other
// load, clock changes) spreads over all rows alike.
void run(std::vector<Row>& rows) {
    for (int k = 0; k < g_repeats; ++k)
        for (Row& r : rows) {
            Phases p;
            r.times.push_back(
                compile_ms(r.source, r.kiln_headers, r.lineinfo, g_phases ? &p : nullptr));
            r.front_end.push_back(p.front_end);
            r.optimizer.push_back(p.optimizer);
            r.ptxas.push_back(p.ptxas);
        }
    if (!g_phases) {
        std::printf("| source (CPU ms of the compiling thread) | median | min |\n");
        std::printf("| --- | --- | --- |\n");
    } else {
        std::printf("| source (CPU ms of the compiling thread; NVRTC's phases, wall ms) | median "
                    "| min | front end | optimizer | ptxas | phases / first row's |\n");
        std::printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    }
    double first_total = 0;
    for (Row& r : rows) {
        std::sort(r.times.begin(), r.times.end());
        std::printf("| %-52s | %8.1f | %8.1f", r.what.c_str(), median(r.times), r.times[0]);
        if (g_phases) {
            const double fe = median(r.front_end), opt = median(r.optimizer), ptx = median(r.ptxas),
                         total = fe + opt + ptx;
            if (first_total == 0) first_total = total;
            std::printf(" | %5.0f | %5.0f | %5.0f | %5.2fx", fe, opt, ptx,
                        first_total > 0 ? total / first_total : 0.0);
        }
        std::printf(" |\n");
    }
}

const char* const kTrivial = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n";

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
    rows.push_back(make_row("trivial kernel", kTrivial, false));
    for (int i = 2; i < argc; ++i) {
        if (std::string(argv[i]) == "--phases") {
            g_phases = true;
            continue;
        }
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
    compile_ms(kTrivial, false);
    run(rows);
    return 0;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "--files") return time_files(argc, argv);
    bool print = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--print")
            print = true;
        else if (a == "--phases")
            g_phases = true;
        else
            g_repeats = std::max(1, std::atoi(argv[i]));
    }
    const std::string trivial = kTrivial;
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
    // The layouts a reduction can take: along the rows of a matrix (a block per row, or several
    // and a combine), over the outer axis of a 3-D array (columns), and over two axes of three.
    const Array matrix = Array::wrap(CUdeviceptr{1} << 32, {4096, 4096}, DType::float32);
    const Array cube = Array::wrap(CUdeviceptr{1} << 32, {64, 128, 256}, DType::float32);
    const kiln::Arg matrix_args[] = {matrix}, cube_args[] = {cube};
    const std::string rows_source = l2norm.source_for(matrix_args, 1, kiln::ReduceCall{1});
    const kiln::ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum");
    const std::string outer_source = sum.source_for(cube_args, 1, kiln::ReduceCall{0});
    const std::string two_axes_source =
        sum.source_for(cube_args, 1, kiln::ReduceCall{kiln::Axes{0, 2}});
    const Array row = Array::wrap(CUdeviceptr{1} << 33, {256}, DType::float32);
    const kiln::Arg broadcast_args[] = {cube, row};
    const kiln::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
                                               "squared_diff");
    const std::string broadcast_source = squared_diff.source_for(broadcast_args, 2);
    if (print) {
        for (const std::string* s : {&elementwise, &broadcast_source, &reduction, &rows_source,
                                     &outer_source, &two_axes_source})
            std::printf("%s\n", s->c_str());
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
    rows.push_back(make_row("elementwise squared_diff, 3-D x with 1-D y", broadcast_source));
    rows.push_back(make_row("reduction l2norm over the rows of 4096x4096", rows_source));
    rows.push_back(make_row("reduction sum over axis 0 of 64x128x256", outer_source));
    rows.push_back(make_row("reduction sum over axes 0, 2 of 64x128x256", two_axes_source));
    run(rows);
    return 0;
}
