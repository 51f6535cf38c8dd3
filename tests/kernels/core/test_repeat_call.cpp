// A repeated call launched from the thread's memo (kernels/repeat_call.hpp) launches exactly what
// preparing the call afresh would: the same grid, block and parameter bytes, for every layout of
// both generated front ends, with new addresses and scalar values. Runs over the fake driver
// (tests/support/fake_driver.cpp), which keeps the last launch's parameters, so it needs no GPU.

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

using kiln::Array;
using kiln::DType;

struct Launch {
    std::vector<unsigned char> params;
    unsigned dims[6] = {};
    std::string describe() const {
        std::string text = "grid " + std::to_string(dims[0]) + "x" + std::to_string(dims[1]) + "x" +
                           std::to_string(dims[2]) + " block " + std::to_string(dims[3]) + "x" +
                           std::to_string(dims[4]) + "x" + std::to_string(dims[5]) + ", " +
                           std::to_string(params.size()) + " parameter bytes";
        return text;
    }
};

using LastLaunchFunction = std::size_t (*)(unsigned char*, std::size_t, unsigned*, void**);
using LaunchesFunction = unsigned long long (*)();

void* fake_driver() {
    kiln::Device::count(); // loads the driver
    return dlopen(std::getenv("KILN_DRIVER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
}

Launch last_launch() {
    static const auto get =
        reinterpret_cast<LastLaunchFunction>(dlsym(fake_driver(), "kiln_fake_driver_last_launch"));
    Launch launch;
    launch.params.resize(4096);
    void* function = nullptr;
    launch.params.resize(get(launch.params.data(), launch.params.size(), launch.dims, &function));
    return launch;
}

unsigned long long launches() {
    static const auto get =
        reinterpret_cast<LaunchesFunction>(dlsym(fake_driver(), "kiln_fake_driver_launches"));
    return get();
}

// @p launch with every occurrence of address @p from (8 bytes) replaced by @p to.
Launch with_address(Launch launch, std::uint64_t from, std::uint64_t to) {
    for (std::size_t at = 0; at + 8 <= launch.params.size(); at += 8)
        if (std::memcmp(launch.params.data() + at, &from, 8) == 0)
            std::memcpy(launch.params.data() + at, &to, 8);
    return launch;
}

// Calls @p first_call on @p memoized (prepared and remembered), then @p call on it (a repeat from
// the memo) and on @p fresh (a kernel object that never saw it: prepared afresh), and expects the
// two launches of @p call to be the same but for the addresses of the outputs each made.
template <class Kernel>
void expect_repeat_as_fresh(const Kernel& memoized, const Kernel& fresh,
                            const std::function<kiln::Outputs(const Kernel&)>& first_call,
                            const std::function<kiln::Outputs(const Kernel&)>& call) {
    first_call(memoized);
    const unsigned long long before = launches();
    const kiln::Outputs repeated = call(memoized);
    Launch from_memo = last_launch();
    const kiln::Outputs prepared = call(fresh);
    const Launch from_fresh = last_launch();
    ASSERT_EQ(launches(), before + 2);
    ASSERT_EQ(repeated.size(), prepared.size());
    for (std::size_t k = 0; k < repeated.size(); ++k) {
        EXPECT_EQ(repeated[k].shape(), prepared[k].shape());
        EXPECT_EQ(repeated[k].dtype(), prepared[k].dtype());
        if (repeated[k].data() != prepared[k].data())
            from_memo = with_address(from_memo, repeated[k].data(), prepared[k].data());
    }
    EXPECT_EQ(from_memo.describe(), from_fresh.describe());
    EXPECT_TRUE(from_memo.params == from_fresh.params) << "the parameter bytes differ";
}

class RepeatCall : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!std::getenv("KILN_DRIVER_LIBRARY")) GTEST_SKIP() << "needs the fake driver";
    }
    kiln::Stream stream;
};

const char* const kIn = "T x, T y, raw T r, int8 s";
const char* const kOut = "T z";
const char* const kOp = "z = x * y + s + r[i % r.size()]";

TEST_F(RepeatCall, AnElementwiseRepeatLaunchesWhatAFreshCallWould) {
    const kiln::ElementwiseKernel memoized(kIn, kOut, kOp, "repeat_elementwise");
    const kiln::ElementwiseKernel fresh(kIn, kOut, kOp, "repeat_elementwise");
    const Array r = kiln::empty({7}, DType::float32, stream);
    const kiln::CallOptions options{stream, {}, {}};
    // Each layout: flat, strided (a transpose), rows (broadcast along a row), tiled, misaligned
    // (no vectors), each with the output given and allocated.
    struct Case {
        const char* name;
        std::function<Array()> x, y;
    };
    const std::vector<Case> cases = {
        {"flat", [&] { return kiln::empty({4099}, DType::float32, stream); },
         [&] { return kiln::empty({4099}, DType::float32, stream); }},
        {"transposed",
         [&] {
             return kiln::empty({40, 70}, DType::float32, stream).transpose();
         },
         [&] {
             return kiln::empty({70, 40}, DType::float32, stream);
         }},
        {"rows",
         [&] {
             return kiln::empty({16, 256}, DType::float32, stream);
         },
         [&] {
             return kiln::empty({256}, DType::float32, stream).broadcast_to({16, 256});
         }},
        {"misaligned",
         [&] {
             return kiln::empty({1001}, DType::float32, stream).slice({kiln::Slice{1, 1001, 1}});
         },
         [&] { return kiln::empty({1000}, DType::float32, stream); }},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const Array x1 = c.x(), y1 = c.y(), x2 = c.x(), y2 = c.y();
        const Array z = kiln::empty(x1.shape(), DType::float32, stream);
        using K = kiln::ElementwiseKernel;
        expect_repeat_as_fresh<K>(
            memoized, fresh, [&](const K& k) { return k(options, x1, y1, r, 3, z); },
            [&](const K& k) { return k(options, x2, y2, r, -5, z); });
        expect_repeat_as_fresh<K>(
            memoized, fresh, [&](const K& k) { return k(options, x1, y1, r, 3); },
            [&](const K& k) { return k(options, x2, y2, r, 100); });
    }
}

TEST_F(RepeatCall, AReductionRepeatLaunchesWhatAFreshCallWould) {
    const char* const in = "T x, T w";
    const kiln::ReductionKernel memoized(in, "T y", "x * w", "a + b", "y = a", "0", "repeat_sum");
    const kiln::ReductionKernel fresh(in, "T y", "x * w", "a + b", "y = a", "0", "repeat_sum");
    // Over rows, over columns (the outer layout), everything (split over blocks, with the
    // workspace), and keepdims; each with a scalar weight and the output allocated.
    const std::vector<kiln::ReduceCall> hows = {
        {1, false, stream}, {0, false, stream}, {kiln::Axes(), false, stream}, {1, true, stream}};
    for (const kiln::ReduceCall& how : hows) {
        SCOPED_TRACE(how.axis.to_string());
        const Array x1 = kiln::empty({64, 3000}, DType::float64, stream);
        const Array x2 = kiln::empty({64, 3000}, DType::float64, stream);
        using K = kiln::ReductionKernel;
        expect_repeat_as_fresh<K>(
            memoized, fresh, [&](const K& k) { return k(how, x1, 2.0); },
            [&](const K& k) { return k(how, x2, 0.5); });
    }
}

TEST_F(RepeatCall, ScalarsAreCheckedOnEveryRepeat) {
    const kiln::ElementwiseKernel k("T x, int8 s", "T z", "z = x + s", "repeat_checked");
    const Array x = kiln::empty({256}, DType::float32, stream);
    const kiln::CallOptions options{stream, {}, {}};
    k(options, x, 3);
    k(options, x, 4);
    EXPECT_THROW(k(options, x, 300), kiln::OverflowError);
    const kiln::ReductionKernel sum("T x, int8 s", "T y", "x + s", "a + b", "y = a", "0",
                                    "repeat_checked_sum");
    const kiln::ReduceCall how{kiln::Axes(), false, stream};
    sum(how, x, 1);
    sum(how, x, 2);
    EXPECT_THROW(sum(how, x, -129), kiln::OverflowError);
}

TEST_F(RepeatCall, ACallThatLooksDifferentIsPreparedAgain) {
    const kiln::ElementwiseKernel memoized("T x", "T z", "z = x * 2", "repeat_shapes");
    const kiln::ElementwiseKernel fresh("T x", "T z", "z = x * 2", "repeat_shapes");
    const kiln::CallOptions options{stream, {}, {}};
    const Array a = kiln::empty({1000}, DType::float32, stream);
    const Array b = kiln::empty({1001}, DType::float32, stream);
    const Array c = kiln::empty({1000}, DType::float64, stream);
    using K = kiln::ElementwiseKernel;
    // Another length, another dtype, another block size: each launches its own preparation.
    expect_repeat_as_fresh<K>(
        memoized, fresh, [&](const K& k) { return k(options, a); },
        [&](const K& k) { return k(options, b); });
    expect_repeat_as_fresh<K>(
        memoized, fresh, [&](const K& k) { return k(options, a); },
        [&](const K& k) { return k(options, c); });
    kiln::CallOptions small_blocks = options;
    small_blocks.block_size = 64;
    expect_repeat_as_fresh<K>(
        memoized, fresh, [&](const K& k) { return k(options, a); },
        [&](const K& k) { return k(small_blocks, a); });
}

TEST_F(RepeatCall, ABadCallAfterARepeatIsStillRefused) {
    const kiln::ElementwiseKernel k("T x, T y", "T z", "z = x + y", "repeat_refused");
    const kiln::CallOptions options{stream, {}, {}};
    const Array x = kiln::empty({512}, DType::float32, stream);
    k(options, x, x);
    k(options, x, x);
    const Array other = kiln::empty({512}, DType::float64, stream);
    const Array shorter = kiln::empty({511}, DType::float32, stream);
    EXPECT_THROW(k(options, x, other), kiln::ArgumentError);
    EXPECT_THROW(k(options, x, shorter), kiln::ShapeError);
    EXPECT_THROW(k(options, x), kiln::ArgumentError);
    // A block size out of range is refused, whatever block size was seen before.
    kiln::CallOptions blocks = options;
    blocks.block_size = 256;
    k(blocks, x, x);
    k(blocks, x, x);
    blocks.block_size = 256 + 2048;
    EXPECT_THROW(k(blocks, x, x), kiln::ArgumentError);
    // A broadcast view as the output overlaps itself, however often the inputs were seen.
    const Array row = kiln::empty({512}, DType::float32, stream).broadcast_to({2, 512});
    const Array matrix = kiln::empty({2, 512}, DType::float32, stream);
    k(options, matrix, matrix);
    EXPECT_THROW(k(options, matrix, matrix, row), kiln::ArgumentError);
}

} // namespace
