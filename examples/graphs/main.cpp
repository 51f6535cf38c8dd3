// kiln::Graph: capture a chain of Kiln calls once, then replay it for a few microseconds of host
// time instead of one launch's worth per kernel. Every front end may be captured: the kernels
// below are loaded by a first direct call, the inputs' memory stays put, and new values are
// copied into it between replays. An output allocated inside the capture (here `norms`) is the
// graph's: its address is fixed, each replay writes it, and it holds the last replay's values.
// Exits 0 when every replay matches the same calls made directly, 1 when not, 77 without a GPU.
#include <kiln/graph.hpp>
#include <kiln/kiln.hpp>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main() {
    try {
        std::string reason;
        if (!kiln::Device::available(&reason)) {
            std::printf("graphs: no GPU, nothing run (%s)\n", reason.c_str());
            return 77;
        }
        const std::int64_t rows = 512, cols = 2048;
        kiln::Stream stream; // a graph is captured from a stream of its own
        kiln::Array x = kiln::empty({rows, cols}, kiln::DType::float32, stream);
        kiln::Array y = kiln::empty({rows, cols}, kiln::DType::float32, stream);
        kiln::Array z = kiln::empty({rows, cols}, kiln::DType::float32, stream);

        kiln::ElementwiseKernel axpy("T a, T x, T y", "T z", "z = a * x + y", "example_axpy");
        kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                     "example_graph_l2norm");
        auto softsign =
            kiln::fuse("example_softsign", [](auto v) { return v / (1 + kiln::abs(v)); });
        kiln::CallOptions on;
        on.stream = stream;
        kiln::OpOptions op;
        op.stream = stream;
        op.out = &z;
        kiln::ReduceCall by_row;
        by_row.axis = {1};
        by_row.stream = stream;

        // The chain, as a function of the stream's work: four kernels.
        auto chain = [&]() -> kiln::Array {
            axpy(on, 2.0f, x, y, z);
            kiln::Array s = softsign(on, z)[0]; // a temporary: made and freed by the graph
            kiln::maximum(s, y, op);
            return l2norm(by_row, z); // one norm per row, allocated
        };
        auto fill = [&](int round) {
            std::vector<float> a(rows * cols), b(rows * cols);
            for (std::size_t i = 0; i < a.size(); ++i) {
                a[i] =
                    static_cast<float>(static_cast<int>((i * 2654435761U + round) % 2001U) - 1000) /
                    1000;
                b[i] =
                    static_cast<float>(static_cast<int>((i * 40503U + 7 * round) % 2001U) - 1000) /
                    1000;
            }
            x.copy_from_host_bytes(a.data(), stream);
            y.copy_from_host_bytes(b.data(), stream);
        };

        fill(0);
        (void)chain(); // compiles and loads every kernel before the capture
        stream.synchronize();
        kiln::Array norms;
        kiln::Graph graph = kiln::Graph::capture(stream, [&] { norms = chain(); });
        kiln::GraphExec exec = graph.instantiate();

        for (int round = 1; round <= 5; ++round) {
            fill(round);         // new values in the same memory
            exec.launch(stream); // the four kernels, one launch
            const std::vector<float> replayed = norms.to_host<float>(stream);
            const std::vector<float> direct = chain().to_host<float>(stream);
            if (replayed != direct) { // the same kernels on the same data: the same bits
                std::fprintf(stderr, "graphs: replay %d differs from the direct calls\n", round);
                return 1;
            }
        }
        norms = kiln::Array(); // frees the last replay's memory, before the graph goes
        std::printf("graphs: 5 replays of a 4-kernel chain match the direct calls\n");
        return 0;
    } catch (const std::exception& e) { // a CaptureError says which call a capture refused
        std::fprintf(stderr, "graphs: %s\n", e.what());
        return 1;
    }
}
