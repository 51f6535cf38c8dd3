// Every front end under kiln::Graph::capture (issue 39, item 4): each captured, the graph replayed
// several times with fresh input values copied in between, every replay's results bitwise equal
// to the same calls made directly. Also outputs allocated in the capture and kept past it (graph
// allocations, freed by the next launch), reductions' workspaces (the graph's own), a block made
// before the capture and dropped inside it, a kernel's first call made under capture, and what a
// capture refuses (CaptureError, the stream usable afterwards).

#include "graph_chain.hpp"

#include "driver/driver.hpp"
#include "gpu.hpp"
#include "kiln/graph.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

using kiln::Array;
using kiln::DType;
namespace chain = kiln::graph_chain;

// Fresh values for each replay: a hash of the index and the round, in [-1, 1).
std::vector<float> fresh(std::size_t n, std::uint32_t round) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint32_t h = static_cast<std::uint32_t>(i) * 0x9e3779b1u ^ (round + 1) * 0x85ebca6bu;
        h ^= h >> 16;
        h *= 0x7feb352du;
        h ^= h >> 15;
        v[i] = static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return v;
}

std::vector<unsigned char> bytes_of(const Array& a, kiln::StreamRef stream) {
    std::vector<unsigned char> out(a.nbytes());
    a.copy_to_host_bytes(out.data(), stream);
    return out;
}

// Poison: NaN bytes, so an element a replay did not write fails the comparison.
void poison(const Array& a, kiln::StreamRef stream) {
    const std::vector<unsigned char> nan(a.nbytes(), 0xff);
    a.copy_from_host_bytes(nan.data(), stream);
}

class GraphCapture : public ::testing::Test {
  protected:
    static constexpr std::int64_t kN = chain::kSide * chain::kSide;
    // Made once a device is known to be there.
    struct Data {
        kiln::Stream stream, other;
        Array x = kiln::empty({kN}, DType::float32, stream);
        Array y = kiln::empty({kN}, DType::float32, stream);
    };
    void SetUp() override {
        KILN_REQUIRE_GPU();
        m_data = std::make_unique<Data>();
    }
    kiln::StreamRef stream() const { return m_data->stream; }
    kiln::StreamRef other_stream() const { return m_data->other; }
    const Array& x() const { return m_data->x; }
    const Array& y() const { return m_data->y; }
    void fill_inputs(std::uint32_t round) const {
        const std::vector<float> a = fresh(kN, 2 * round), b = fresh(kN, 2 * round + 1);
        x().copy_from_host_bytes(a.data(), stream());
        y().copy_from_host_bytes(b.data(), stream());
    }

  private:
    std::unique_ptr<Data> m_data;
};

constexpr int kRounds = 4; // replays per graph, each with fresh inputs

TEST_F(GraphCapture, TheMixedChainReplaysBitwiseEqualToDirectCalls) {
    const kiln::StreamRef stream = this->stream();
    const Array &x = this->x(), &y = this->y();
    const chain::Kernels k;
    chain::Results direct(stream), captured(stream);
    fill_inputs(100);
    chain::run(k, x, y, direct, stream); // compiles and loads everything before the capture
    stream.synchronize();
    kiln::Graph graph =
        kiln::Graph::capture(stream, [&] { chain::run(k, x, y, captured, stream); });
    const kiln::GraphExec exec = graph.instantiate();
    for (int round = 0; round < kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        fill_inputs(round);
        for (const Array* a : captured.all())
            if (a != &captured.fused && a != &captured.fused_rows) poison(*a, stream);
        // Odd rounds replay on another stream: the graph's workspaces are its own.
        const kiln::StreamRef on = round % 2 ? other_stream() : stream;
        stream.synchronize();
        exec.launch(on);
        on.synchronize();
        chain::run(k, x, y, direct, stream);
        const std::vector<const Array*> want = direct.all(), got = captured.all();
        ASSERT_EQ(want.size(), got.size());
        for (std::size_t i = 0; i < want.size(); ++i)
            EXPECT_EQ(bytes_of(*got[i], stream), bytes_of(*want[i], stream)) << "output " << i;
    }
}

TEST_F(GraphCapture, AnOutputAllocatedInTheCaptureHoldsEachReplaysResult) {
    const kiln::StreamRef stream = this->stream();
    const Array &x = this->x(), &y = this->y();
    const kiln::ElementwiseKernel fma("T x, T y", "T z", "z = x * y + 1", "graph_alloc_fma");
    kiln::CallOptions on;
    on.stream = stream;
    fill_inputs(7);
    (void)fma(on, x, y); // loads before the capture
    stream.synchronize();
    Array z; // kept past the capture: the graph's allocation, made again by each launch
    kiln::Graph graph = kiln::Graph::capture(stream, [&] { z = fma(on, x, y)[0]; });
    const kiln::GraphExec exec = graph.instantiate();
    const CUdeviceptr address = z.data();
    for (int round = 0; round < kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        fill_inputs(round);
        exec.launch(stream); // relaunching with z unfreed needs CUDA_GRAPH_..._AUTO_FREE_ON_LAUNCH
        const Array want = fma(on, x, y)[0];
        EXPECT_EQ(z.data(), address) << "a graph allocation's address is fixed";
        EXPECT_EQ(bytes_of(z, stream), bytes_of(want, stream));
    }
    z = Array(); // frees the last launch's memory
    fill_inputs(9);
    exec.launch(stream); // nothing unfreed: launches as before
    stream.synchronize();
}

TEST_F(GraphCapture, ReductionsUseTheGraphsOwnWorkspaceAcrossReplays) {
    const kiln::StreamRef stream = this->stream();
    const Array& x = this->x();
    // Whole-array reductions split across blocks. Under capture each gets a workspace of the
    // graph's own; a larger direct reduction between replays grows the stream's workspace (its
    // old memory freed), and odd replays run on another stream while direct calls use the
    // stream's: neither may disturb a replay.
    const kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                       "graph_l2norm");
    const kiln::ReduceCall all{{}, false, stream};
    fill_inputs(3);
    (void)l2norm(all, x); // loads; the stream's workspace is made here
    kiln::ReduceOptions reduce;
    reduce.stream = stream;
    (void)kiln::sum(x, {}, reduce);
    stream.synchronize();
    Array norm, total;
    kiln::Graph graph = kiln::Graph::capture(stream, [&] {
        norm = l2norm(all, x);
        total = kiln::sum(x, {}, reduce);
    });
    const kiln::GraphExec exec = graph.instantiate();
    const Array big = kiln::full({4 * kN}, 1.0, DType::float32, stream);
    for (int round = 0; round < 2 * kRounds; ++round) {
        SCOPED_TRACE("round " + std::to_string(round));
        fill_inputs(round);
        exec.launch(round % 2 ? other_stream() : stream);
        (void)l2norm(all, big); // a direct reduction: may grow the stream's workspace
        if (round % 2) other_stream().synchronize();
        EXPECT_EQ(bytes_of(norm, stream), bytes_of(l2norm(all, x), stream));
        EXPECT_EQ(bytes_of(total, stream), bytes_of(kiln::sum(x, {}, reduce), stream));
    }
}

TEST_F(GraphCapture, EachFrontEndCapturedAloneReplaysLikeItsDirectCall) {
    const kiln::StreamRef stream = this->stream();
    const Array &x = this->x(), &y = this->y();
    const chain::Kernels k;
    const int n = static_cast<int>(kN);
    const kiln::LaunchConfig raw{{static_cast<unsigned>((n + 255) / 256)}, {256}, 0, stream};
    kiln::CallOptions call;
    call.stream = stream;
    kiln::OpOptions op;
    op.stream = stream;
    struct Case {
        const char* name;
        std::function<Array()> run; // the call, its result returned
    };
    const Array raw_out = kiln::empty({kN}, DType::float32, stream);
    const std::vector<Case> cases = {
        {"ElementwiseKernel", [&] { return k.fma(call, x, y, 3.0f)[0]; }},
        {"ReductionKernel over rows",
         [&] {
             return k.l2norm(kiln::ReduceCall{1, false, stream}, x.reshape({2048, 512}));
         }},
        {"kiln::fuse elementwise", [&] { return k.fused_ew(call, x, y)[0]; }},
        {"kiln::fuse reduction",
         [&] {
             return k.fused_rows(call, x.reshape({512, 2048}))[0];
         }},
        {"kiln::add", [&] { return kiln::add(x, y, op); }},
        {"kiln::exp", [&] { return kiln::exp(x, op); }},
        {"kiln::where", [&] { return kiln::where(kiln::greater(x, y, op), x, y, op); }},
        {"kiln::max over axis 0",
         [&] {
             kiln::ReduceOptions r;
             r.stream = stream;
             return kiln::max(x.reshape({64, kN / 64}), {0}, r);
         }},
        {"kiln::mean",
         [&] {
             kiln::ReduceOptions r;
             r.stream = stream;
             return kiln::mean(x, {}, r);
         }},
        {"RawKernel",
         [&] {
             k.scale(raw, x.data<float>(), raw_out.data<float>(), 0.75f, n);
             return raw_out;
         }},
        {"RawModule",
         [&] {
             k.shift(raw, y.data<float>(), raw_out.data<float>(), n);
             return raw_out;
         }},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        fill_inputs(11);
        const std::vector<unsigned char> first = bytes_of(c.run(), stream); // loads it
        Array got;
        kiln::Graph graph = kiln::Graph::capture(stream, [&] { got = c.run(); });
        const kiln::GraphExec exec = graph.instantiate();
        for (int round = 0; round < 3; ++round) {
            fill_inputs(20 + round);
            exec.launch(stream);
            const std::vector<unsigned char> replayed = bytes_of(got, stream);
            EXPECT_EQ(replayed, bytes_of(c.run(), stream)) << "round " << round;
            EXPECT_NE(replayed, first) << "the replay read the fresh inputs";
        }
    }
}

TEST_F(GraphCapture, ABlockMadeBeforeTheCaptureMayBeDroppedInsideIt) {
    const kiln::StreamRef stream = this->stream();
    const Array &x = this->x(), &y = this->y();
    // `w = kiln::add(x, y)` inside the capture drops the w made before it: its free cannot be a
    // node of the graph (the driver frees only the graph's allocations there) and waits for the
    // capture's end. A real driver invalidated the capture before Kiln set such blocks aside.
    kiln::OpOptions op;
    op.stream = stream;
    fill_inputs(5);
    Array w = kiln::add(x, y, op);
    stream.synchronize();
    kiln::Graph graph = kiln::Graph::capture(stream, [&] { w = kiln::add(x, y, op); });
    const kiln::GraphExec exec = graph.instantiate();
    for (int round = 0; round < 3; ++round) {
        fill_inputs(round);
        exec.launch(stream);
        EXPECT_EQ(bytes_of(w, stream), bytes_of(kiln::add(x, y, op), stream)) << round;
    }
}

TEST_F(GraphCapture, AKernelsFirstCallMayBeCaptured) {
    const kiln::StreamRef stream = this->stream();
    const Array &x = this->x(), &y = this->y();
    // Compiling is host work; loading the module under capture is allowed from CUDA 12.3's
    // driver on, and refused before it with a CaptureError that says to call it first.
    const kiln::ElementwiseKernel first("T x, T y", "T z", "z = x - 2 * y", "graph_first_call");
    kiln::CallOptions on;
    on.stream = stream;
    fill_inputs(1);
    Array z;
    if (kiln::detail::driver().version < 12030) {
        EXPECT_THROW(kiln::Graph::capture(stream, [&] { z = first(on, x, y)[0]; }),
                     kiln::CaptureError);
        GTEST_SKIP() << "driver " << kiln::detail::driver().version << " loads no module under "
                     << "capture: refused with a CaptureError, as it should be";
    }
    kiln::Graph graph = kiln::Graph::capture(stream, [&] { z = first(on, x, y)[0]; });
    const kiln::GraphExec exec = graph.instantiate();
    for (int round = 0; round < 2; ++round) {
        fill_inputs(round);
        exec.launch(stream);
        EXPECT_EQ(bytes_of(z, stream), bytes_of(first(on, x, y)[0], stream)) << round;
    }
}

TEST_F(GraphCapture, WhatACaptureRefusesIsACaptureErrorAndTheStreamStaysUsable) {
    const kiln::StreamRef stream = this->stream();
    const Array& x = this->x();
    const kiln::ElementwiseKernel twice("T x", "T z", "z = 2 * x", "graph_refusals");
    kiln::CallOptions on;
    on.stream = stream;
    fill_inputs(2);
    const Array z = twice(on, x)[0];
    const std::vector<float> host(kN, 1.0f);
    const std::vector<std::pair<const char*, std::function<void()>>> refused = {
        {"to_host", [&] { (void)z.to_host<float>(stream); }},
        {"from_host", [&] { (void)kiln::from_host(host, stream); }},
        {"StreamRef::synchronize", [&] { stream.synchronize(); }},
        {"Device::synchronize", [&] { kiln::Device::current().synchronize(); }},
    };
    for (const auto& [name, call] : refused) {
        SCOPED_TRACE(name);
        try {
            kiln::Graph::capture(stream, [&] {
                twice(on, x, z);
                call();
            });
            ADD_FAILURE() << "the capture accepted it";
        } catch (const kiln::CaptureError& e) {
            EXPECT_NE(std::string(e.what()).find("captured into a CUDA graph"), std::string::npos)
                << e.what();
        }
        // The capture ended: the stream works directly again.
        fill_inputs(3);
        twice(on, x, z);
        EXPECT_EQ(bytes_of(z, stream), bytes_of(twice(on, x)[0], stream));
    }
}

} // namespace
