// Blocks and reduction workspaces on a program's own streams (a StreamRef over a CUstream the
// program made), on a GPU: the block cache serves them as it serves Kiln's streams, and a stream
// made after another was destroyed (often at the same handle) never gets the destroyed one's
// block or workspace while its work is still running. The destroyed stream's work is held back by
// a kernel that spins for a tenth of a second, so that a shared block would be written by it
// after the new stream's work is done, and the new stream's results would be wrong.

#include "core/reduction_workspace.hpp"
#include "driver/driver.hpp"
#include "gpu.hpp"
#include "kiln/kiln.hpp"
#include "memory/block_cache.hpp"
#include "random_data.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace {

namespace kd = kiln::detail;
using kiln::Array;
using kiln::DType;

constexpr const char* kSpin = R"(
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
)";
// About 0.1 s at 2 GHz: far longer than everything the new stream does meanwhile.
constexpr long long kSpinCycles = 200'000'000;

// A stream the program makes itself, as CuPy or PyTorch would: Kiln never sees its end.
struct ProgramStream {
    CUstream handle = nullptr;
    ProgramStream() {
        EXPECT_EQ(kd::driver().cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    }
    ProgramStream(const ProgramStream&) = delete;
    ProgramStream& operator=(const ProgramStream&) = delete;
    ~ProgramStream() { destroy(); }
    void destroy() {
        if (!handle) return;
        EXPECT_EQ(kd::driver().cuStreamDestroy(std::exchange(handle, nullptr)), CUDA_SUCCESS);
    }
};

using kiln::test::random_floats;

// The number of elements of @p got that differ from x * y + b by more than rounding.
std::size_t wrong(const std::vector<float>& got, const std::vector<float>& x,
                  const std::vector<float>& y, float b) {
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i)
        if (std::abs(double(got[i]) - (double(x[i]) * y[i] + b)) > 1e-5) ++bad;
    return bad;
}

void spin(const kiln::RawKernel& kernel, CUstream stream) {
    kernel(kiln::LaunchConfig{kiln::Dim3(1), kiln::Dim3(1), 0, stream}, kSpinCycles);
}

const kiln::ElementwiseKernel& fma() {
    static const kiln::ElementwiseKernel k("T x, T y, T b", "T z", "z = x * y + b",
                                           "program_stream_fma");
    return k;
}

TEST(ProgramStreams, AStreamMadeAfterAnotherEndsNeverGetsItsBlockWhileItsWorkRuns) {
    KILN_REQUIRE_GPU();
    const auto& d = kd::driver();
    constexpr std::int64_t n = 1 << 16; // 256 KiB blocks, well under the cache's limit
    const std::vector<float> x = random_floats(n, 1), y = random_floats(n, 2);
    const std::vector<float> x2 = random_floats(n, 3), y2 = random_floats(n, 4);
    const Array dx = kiln::from_host(x, {n}), dy = kiln::from_host(y, {n});
    const Array dx2 = kiln::from_host(x2, {n}), dy2 = kiln::from_host(y2, {n});
    const kiln::RawKernel spinner(kSpin, "spin");
    ASSERT_EQ(d.cuCtxSynchronize(), CUDA_SUCCESS);

    ProgramStream old;
    const CUstream old_handle = old.handle;
    const kiln::CallOptions on_old{old.handle, {}, {}};
    // The loop a program runs: from its second turn on, each output is the block the turn before
    // last dropped, with no allocation asked of the driver.
    const auto before = kd::block_cache_counts();
    for (int turn = 0; turn < 8; ++turn) {
        const Array z = fma()(on_old, dx, dy, 1.0f);
        if (turn == 7) {
            EXPECT_EQ(wrong(z.to_host<float>(old.handle), x, y, 1.0f), 0u);
        }
    }
    const auto looped = kd::block_cache_counts();
    EXPECT_GE(looped.taken - before.taken, 6u) << "a program's stream got no block back";
    EXPECT_GE(looped.kept_foreign - before.kept_foreign, 7u);

    // The old stream's last output is written after a tenth of a second of spinning, and dropped
    // at once: its block is kept for the old stream, with its write still to come.
    spin(spinner, old.handle);
    CUdeviceptr pending = 0;
    { pending = fma()(on_old, dx, dy, 1.0f)[0].data(); }
    old.destroy();

    ProgramStream next; // the driver may give it the old handle
    RecordProperty("same_handle", next.handle == old_handle ? "yes" : "no");
    const Array w = fma()(kiln::CallOptions{next.handle, {}, {}}, dx2, dy2, 2.0f);
    EXPECT_NE(w.data(), pending) << "the new stream got a block the old one is about to write";
    ASSERT_EQ(d.cuCtxSynchronize(), CUDA_SUCCESS); // the old stream's write has landed too
    EXPECT_EQ(wrong(w.to_host<float>(next.handle), x2, y2, 2.0f), 0u)
        << "the new stream's output was overwritten by the destroyed stream's work";

    // Newer blocks push the old stream's out of the thread's four slots: it goes back through
    // its event on the release stream, and the driver takes it without complaint.
    const auto pushed = kd::block_cache_counts();
    for (int i = 1; i <= 4; ++i)
        kiln::empty({n + 64 * i}, DType::float32, next.handle);
    EXPECT_GE(kd::block_cache_counts().freed_after_event - pushed.freed_after_event, 1u);
    EXPECT_EQ(d.cuCtxSynchronize(), CUDA_SUCCESS);
    const Array again = fma()(kiln::CallOptions{next.handle, {}, {}}, dx, dy, 3.0f);
    EXPECT_EQ(wrong(again.to_host<float>(next.handle), x, y, 3.0f), 0u);
}

// Sum of @p v in double, and of magnitudes (what rounding errors scale with).
std::pair<double, double> host_sum(const std::vector<float>& v) {
    double sum = 0, scale = 0;
    for (float e : v) {
        sum += e;
        scale += std::abs(double(e));
    }
    return {sum, scale};
}

TEST(ProgramStreams, ASplitReductionStaysRightAcrossADestroyedAndRemadeStream) {
    KILN_REQUIRE_GPU();
    const auto& d = kd::driver();
    constexpr std::int64_t n = std::int64_t{1} << 22; // one output split across blocks
    const std::vector<float> a = random_floats(n, 5), b = random_floats(n, 6);
    const Array da = kiln::from_host(a, {n}), db = kiln::from_host(b, {n});
    const Array out_a = kiln::full({}, -1e30, DType::float32);
    const Array out_b = kiln::full({}, -1e30, DType::float32);
    const kiln::RawKernel spinner(kSpin, "spin");
    ASSERT_EQ(d.cuCtxSynchronize(), CUDA_SUCCESS);
    const auto [sum_a, scale_a] = host_sum(a);
    const auto [sum_b, scale_b] = host_sum(b);
    const auto close = [](const Array& out, double want, double scale) {
        return std::abs(double(out.to_host<float>()[0]) - want) <= 1e-6 * scale + 1e-3;
    };

    ProgramStream old;
    const CUstream old_handle = old.handle;
    kiln::ReduceOptions on_old;
    on_old.stream = old.handle;
    for (int turn = 0; turn < 4; ++turn) {
        const Array s = kiln::sum(da, {}, on_old);
        EXPECT_NEAR(double(s.to_host<float>(old.handle)[0]), sum_a, 1e-6 * scale_a + 1e-3);
    }
    const CUdeviceptr old_workspace =
        kd::lease_workspace(kd::current_context(), old.handle, 4096, 16).counters;
    // The old stream's last reduction runs after the spin, into a given output.
    spin(spinner, old.handle);
    on_old.out = &out_a;
    kiln::sum(da, {}, on_old);
    old.destroy();

    ProgramStream next;
    RecordProperty("same_handle", next.handle == old_handle ? "yes" : "no");
    EXPECT_NE(kd::lease_workspace(kd::current_context(), next.handle, 4096, 16).counters,
              old_workspace)
        << "the new stream shares the workspace of a reduction still to run";
    kiln::ReduceOptions on_next;
    on_next.stream = next.handle;
    on_next.out = &out_b;
    kiln::sum(db, {}, on_next);
    ASSERT_EQ(d.cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_TRUE(close(out_a, sum_a, scale_a)) << "the destroyed stream's last reduction";
    EXPECT_TRUE(close(out_b, sum_b, scale_b)) << "the new stream's reduction";

    // More streams than a context keeps workspaces for: the old ones go back after their last
    // launches, and every result stays right.
    std::vector<ProgramStream> many(kd::kStreamWorkspaces + 2);
    std::vector<Array> sums;
    for (const ProgramStream& s : many) {
        kiln::ReduceOptions on;
        on.stream = s.handle;
        sums.push_back(kiln::sum(db, {}, on));
    }
    ASSERT_EQ(d.cuCtxSynchronize(), CUDA_SUCCESS);
    for (const Array& s : sums)
        EXPECT_TRUE(close(s, sum_b, scale_b));
}

} // namespace
