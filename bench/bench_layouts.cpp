// Every layout against the memory's ceiling (issue 39, item 1), in one process: a device-to-device
// copy of 2^28 floats (bytes read + written) first, then elementwise `x * y + b` with transposed
// and permuted inputs, sum / norm / argmax / argmin over short rows, over axis 0 with few rows and
// over mixed axes of 3-D arrays, and fused kernels over a transposed input, each reading about
// 1 GiB. Each case: fresh random inputs, given outputs (the ready ops' `out`), a warm-up that
// compiles and loads, then CUDA events around each of --reps calls (default 15) and the median.
//
//   bench_layouts [--reps N] [--filter SUBSTRING] OUT.csv
//
// OUT.csv: layout (quoted: it may hold commas),size,gbs,pct_of_copy,read_gbs,ms. `gbs` counts bytes
// read + written, as the copy does, so `pct_of_copy` compares like with like; `read_gbs` counts
// bytes read alone (how issue 39 quoted reductions: an axis-0 sum over 4 rows writes a quarter of
// what it reads, so its read-only figure can reach at most 80% of the copy's). A readable table
// goes to stdout.

#include "bench_support.hpp"
#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using kiln::Array;
using kiln::Axes;
using kiln::Dims;
using kiln::DType;
using kiln::bench::random_array;

constexpr std::int64_t kN = std::int64_t{1} << 28; // floats: 1 GiB
constexpr std::int64_t kSide = 16384;              // kSide^2 == kN

struct Result {
    std::string layout, size;
    double gbs = 0, read_gbs = 0, ms = 0;
};

int g_reps = 15;

// The median of g_reps event-timed calls, after three that compile, load and warm.
double median_ms(const std::function<void()>& call) {
    kiln::Event start(true), stop(true);
    for (int i = 0; i < 3; ++i)
        call();
    std::vector<double> times;
    for (int i = 0; i < g_reps; ++i) {
        start.record();
        call();
        stop.record();
        stop.synchronize();
        times.push_back(kiln::elapsed_ms(start, stop));
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

class Runner {
  public:
    Runner(std::string filter)
        : m_filter(std::move(filter)) {}

    // Times @p call, which reads @p read and writes @p written bytes.
    void run(const std::string& layout, const std::string& size, double read, double written,
             const std::function<void()>& call) {
        if (!m_filter.empty() && layout.find(m_filter) == std::string::npos && layout != "copy")
            return;
        Result r{layout, size};
        try {
            r.ms = median_ms(call);
        } catch (const std::exception& e) {
            std::printf("%-34s %-18s ERROR %s\n", layout.c_str(), size.c_str(), e.what());
            return;
        }
        r.gbs = (read + written) / (r.ms * 1e6);
        r.read_gbs = read / (r.ms * 1e6);
        if (layout == "copy") m_copy = r.gbs;
        std::printf("%-34s %-18s %8.3f ms %8.0f GB/s %6.1f%% of copy %8.0f GB/s read\n",
                    layout.c_str(), size.c_str(), r.ms, r.gbs, pct(r.gbs), r.read_gbs);
        std::fflush(stdout);
        m_results.push_back(r);
    }
    bool wants(const std::string& layout) const {
        return m_filter.empty() || layout.find(m_filter) != std::string::npos;
    }
    double pct(double gbs) const { return m_copy > 0 ? 100.0 * gbs / m_copy : 0.0; }

    bool write_csv(const char* path) const {
        std::FILE* f = std::fopen(path, "w");
        if (!f) return false;
        std::fprintf(f, "layout,size,gbs,pct_of_copy,read_gbs,ms\n");
        for (const Result& r : m_results)
            std::fprintf(f, "\"%s\",%s,%.1f,%.1f,%.1f,%.4f\n", r.layout.c_str(), r.size.c_str(),
                         r.gbs, pct(r.gbs), r.read_gbs, r.ms);
        return std::fclose(f) == 0;
    }

  private:
    std::string m_filter;
    double m_copy = 0;
    std::vector<Result> m_results;
};

std::string shape_text(const Dims& d) {
    std::string s;
    for (int k = 0; k < d.size(); ++k)
        s += (k ? "x" : "") + std::to_string(d[k]);
    return s;
}

const kiln::ElementwiseKernel& fma3() {
    static kiln::ElementwiseKernel k("T x, T y, T b", "T z", "z = x * y + b", "fma3");
    return k;
}

double bytes_of(const Array& a) {
    return static_cast<double>(a.size()) * static_cast<double>(kiln::itemsize(a.dtype()));
}

void copy_ceiling(Runner& run) {
    Array x = random_array({kN}), z = kiln::empty({kN}, DType::float32);
    run.run("copy", std::to_string(kN), bytes_of(x), bytes_of(z), [&] {
        KILN_CU(cuMemcpyDtoDAsync(z.data(), x.data(), static_cast<std::size_t>(kN) * 4, nullptr));
    });
}

// z = x * y + b, every operand 1 GiB, x a view of @p base permuted by @p axes (empty: as is).
void elementwise(Runner& run, const std::string& layout, const Dims& base,
                 const std::vector<int>& axes) {
    if (!run.wants(layout)) return;
    Array x = axes.empty() ? random_array(base) : random_array(base).transpose(axes);
    const Dims shape = x.shape();
    Array y = random_array(shape), b = random_array(shape), z = kiln::empty(shape, DType::float32);
    run.run(layout, shape_text(shape), 3 * bytes_of(y), bytes_of(z), [&] { fma3()(x, y, b, z); });
}

using ReadyReduction = Array (*)(const Array&, const Axes&, const kiln::ReduceOptions&);

// op(x, axis) over a fresh array of @p shape into a given output.
void reduction(Runner& run, const std::string& name, ReadyReduction op, const Dims& shape,
               const Axes& axis, const std::string& what) {
    const std::string layout = name + " " + what;
    if (!run.wants(layout)) return;
    Array x = random_array(shape);
    Array out = op(x, axis, {}); // the result's shape and dtype
    kiln::ReduceOptions options;
    options.out = &out;
    run.run(layout, shape_text(shape), bytes_of(x), bytes_of(out),
            [&] { (void)op(x, axis, options); });
}

void reductions(Runner& run) {
    const std::pair<const char*, ReadyReduction> ops[] = {{"sum", &kiln::sum},
                                                          {"l2norm", &kiln::norm},
                                                          {"argmax", &kiln::argmax},
                                                          {"argmin", &kiln::argmin}};
    for (const auto& [name, op] : ops) {
        for (std::int64_t row : {16, 32, 64})
            reduction(run, name, op, {kN / row, row}, Axes{1}, "rows of " + std::to_string(row));
        for (std::int64_t rows : {2, 4, 16, 64})
            reduction(run, name, op, {rows, kN / rows}, Axes{0},
                      "axis 0, " + std::to_string(rows) + " rows");
        // Mixed axes of 3-D arrays: the middle axis (columns in batches), and a short middle
        // axis of many batches.
        reduction(run, name, op, {256, 1024, 1024}, Axes{1}, "3-D axis 1");
        reduction(run, name, op, {kN / 256, 16, 16}, Axes{1}, "3-D axis 1, 16x16");
        if (std::strcmp(name, "sum") == 0 || std::strcmp(name, "l2norm") == 0) {
            reduction(run, name, op, {256, 1024, 1024}, Axes{0, 2}, "3-D axes (0, 2)");
            reduction(run, name, op, {1024, 1024, 256}, Axes{0, 2}, "3-D axes (0, 2), short");
        }
    }
}

// kiln::fuse over the transpose of a contiguous 16384^2 array.
void fused(Runner& run) {
    static auto fma = kiln::fuse("layouts_fused_fma", [](auto x, auto y) { return x * y + 1.0f; });
    static auto dot_rows =
        kiln::fuse("layouts_fused_dot_rows", [](auto x, auto y) { return kiln::sum(x * y, -1); });
    if (run.wants("fused x * y + 1, x transposed")) {
        Array x = random_array({kSide, kSide}).transpose(), y = random_array({kSide, kSide});
        run.run("fused x * y + 1, x transposed", shape_text(y.shape()), 2 * bytes_of(y),
                bytes_of(y), [&] { (void)fma(x, y); });
    }
    if (run.wants("fused sum(x * y, -1), x transposed")) {
        Array x = random_array({kSide, kSide}).transpose(), y = random_array({kSide, kSide});
        run.run("fused sum(x * y, -1), x transposed", shape_text(y.shape()), 2 * bytes_of(y),
                static_cast<double>(kSide) * 4, [&] { (void)dot_rows(x, y); });
    }
}

} // namespace

int main(int argc, char** argv) {
    const char* csv = nullptr;
    std::string filter;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            g_reps = std::max(1, std::atoi(argv[++i]));
        else if (std::strcmp(argv[i], "--filter") == 0 && i + 1 < argc)
            filter = argv[++i];
        else
            csv = argv[i];
    }
    if (!csv) {
        std::fprintf(stderr, "usage: bench_layouts [--reps N] [--filter SUBSTRING] OUT.csv\n");
        return 2;
    }
    std::string reason;
    if (!kiln::Device::available(&reason)) {
        std::fprintf(stderr, "bench_layouts: no GPU: %s\n", reason.c_str());
        return 77;
    }
    std::printf("%s, %d timed calls a case (median)\n", kiln::Device::current().name().c_str(),
                g_reps);
    Runner run(filter);
    copy_ceiling(run);
    elementwise(run, "elementwise contiguous", {kN}, {});
    elementwise(run, "elementwise x transposed", {kSide, kSide}, {1, 0});
    // Batched transposes: x's fastest axis the middle one, or the first.
    elementwise(run, "elementwise x permuted (0,2,1)", {256, 1024, 1024}, {0, 2, 1});
    elementwise(run, "elementwise x permuted (2,0,1)", {1024, 1024, 256}, {2, 0, 1});
    reductions(run);
    fused(run);
    if (!run.write_csv(csv)) {
        std::fprintf(stderr, "bench_layouts: cannot write %s\n", csv);
        return 1;
    }
    return 0;
}
