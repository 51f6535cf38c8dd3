// What users do by hand to tune a RawKernel, done once: time it with CUDA events over sizes (10^4
// to 10^7 elements by default) and block and grid choices, and write every figure as JSON for
// bench/plot_tune_raw_kernel.py. The kernel is a grid-stride SAXPY (y = a * x + y over float32),
// so a grid smaller than the data still covers it and grid choices are real choices:
//
//   cover     ceil(n / block) blocks: a thread per element
//   waves:W   W waves of resident blocks (the occupancy the driver reports), at most cover
//
//   build/bench/tune_raw_kernel [--out FILE] [--sizes 10000,100000,...] [--repeat R]
//   python3 bench/plot_tune_raw_kernel.py FILE OUT.png
//
// Each configuration: a warm-up launch, then R timed batches of enough launches to fill about
// 0.5 ms of GPU time each; the figure is the fastest batch's time per launch (the least
// disturbed). Without a GPU it says why and exits with status 2.

#include "kiln/kiln.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace {

const char* const kSource = R"(
extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y,
                                 long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
)";

struct Options {
    std::string out;
    std::vector<long long> sizes{10'000, 100'000, 1'000'000, 10'000'000};
    int repeat = 5;
};

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--out" && has_value) {
            o.out = argv[++i];
        } else if (arg == "--sizes" && has_value) {
            o.sizes.clear();
            std::stringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');)
                o.sizes.push_back(std::stoll(item));
        } else if (arg == "--repeat" && has_value) {
            o.repeat = std::max(1, std::atoi(argv[++i]));
        } else {
            std::cerr << "usage: tune_raw_kernel [--out FILE] [--sizes N,N,...] [--repeat R]\n";
            std::exit(1);
        }
    }
    return o;
}

std::string quoted(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + '"';
}

} // namespace

int main(int argc, char** argv) {
    const Options options = parse(argc, argv);
    std::string reason;
    if (!kiln::Device::available(&reason)) {
        std::cerr << "tune_raw_kernel: no GPU: " << reason << "\n";
        return 2;
    }
    const kiln::Device device = kiln::Device::current();
    const int multiprocessors = device.multiprocessor_count();
    const kiln::RawKernel saxpy(kSource, "saxpy");
    const kiln::Function& function = saxpy.function();
    const kiln::Event start(true), stop(true);

    std::ostringstream rows;
    const char* separator = "";
    for (const long long n : options.sizes) {
        const kiln::Array x = kiln::full({n}, 1.0, kiln::DType::float32);
        const kiln::Array y = kiln::full({n}, 2.0, kiln::DType::float32);
        double best_ms = std::numeric_limits<double>::infinity();
        for (int block = 64; block <= 1024; block *= 2) {
            if (block > function.max_threads_per_block()) break;
            const long long cover = (n + block - 1) / block;
            const int resident = std::max(1, function.max_active_blocks_per_multiprocessor(block));
            std::vector<std::pair<std::string, long long>> grids{{"cover", cover}};
            for (int waves : {1, 2, 4, 8, 32}) {
                const long long blocks = static_cast<long long>(waves) * multiprocessors * resident;
                if (blocks < cover) grids.emplace_back("waves:" + std::to_string(waves), blocks);
            }
            for (const auto& [rule, blocks] : grids) {
                const kiln::Dim3 grid(static_cast<unsigned>(std::min(blocks, 0x7fffffffLL)));
                auto launch = [&] {
                    saxpy(grid, kiln::Dim3(block), 0.5f, x.data<float>(), y.data<float>(), n);
                };
                launch(); // warm-up
                start.record();
                launch();
                stop.record();
                stop.synchronize();
                const double once = kiln::elapsed_ms(start, stop);
                const int launches =
                    std::clamp(static_cast<int>(0.5 / std::max(once, 1e-4)), 1, 200);
                double ms = std::numeric_limits<double>::infinity();
                for (int r = 0; r < options.repeat; ++r) {
                    start.record();
                    for (int k = 0; k < launches; ++k)
                        launch();
                    stop.record();
                    stop.synchronize();
                    ms =
                        std::min(ms, static_cast<double>(kiln::elapsed_ms(start, stop)) / launches);
                }
                best_ms = std::min(best_ms, ms);
                const double gbs = 12.0 * static_cast<double>(n) / (ms * 1e6); // read x, y; write y
                char line[256];
                std::snprintf(line, sizeof line,
                              "%s\n    {\"n\": %lld, \"block\": %d, \"grid\": %u, \"grid_rule\": "
                              "\"%s\", \"ms\": %.6f, \"gbs\": %.2f}",
                              separator, n, block, grid.x, rule.c_str(), ms, gbs);
                rows << line;
                separator = ",";
            }
        }
        std::cerr << "n = " << n << ": best " << best_ms * 1e3 << " us per launch\n";
    }

    std::ostringstream json;
    json << "{\n  \"device\": " << quoted(device.name())
         << ",\n  \"arch\": " << quoted(device.arch())
         << ",\n  \"multiprocessors\": " << multiprocessors
         << ",\n  \"kernel\": \"saxpy (grid-stride, float32, 12 bytes per element)\",\n"
         << "  \"results\": [" << rows.str() << "\n  ]\n}\n";
    if (options.out.empty()) {
        std::cout << json.str();
    } else {
        std::ofstream file(options.out);
        file << json.str();
        if (!file) {
            std::cerr << "tune_raw_kernel: cannot write " << options.out << "\n";
            return 1;
        }
    }
    return 0;
}
