// The launch tuner on the GPU: tuned elementwise kernels and reductions give bitwise the untuned
// results in every layout, candidate runs never write the caller's arrays (outputs read by the
// operation, outputs aliasing inputs, raw inputs the operation writes), and a second kernel
// instance reuses the stored choice without timing, while a damaged record is tuned again. Each
// test (a process of its own under CTest) has a fresh cache directory, so the first tuned call of
// a shape class always times its candidates.

#include "gpu.hpp"
#include "process_cache_dir.hpp"
#include "random_data.hpp"
#include "run_command.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <new>
#include <regex>
#include <set>
#include <string>
#include <vector>

using kiln::Array;
using kiln::Axes;
using kiln::CallOptions;
using kiln::DType;
using kiln::ElementwiseKernel;
using kiln::ElementwiseOptions;
using kiln::ReduceCall;
using kiln::ReductionKernel;
using kiln::ReductionOptions;
using kiln::Slice;
using kiln::TuningStatistics;

// Every allocation through operator new is counted, so a tuned hot call can be compared with an
// untuned one. (GCC takes the replaced pair for a mismatch where it inlines standard containers.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
namespace {
std::atomic<long> g_allocations{0};
} // namespace

void* operator new(std::size_t size) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(size ? size : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}

namespace {

template <class F> long allocations_in(F&& f) {
    const long before = g_allocations.load();
    f();
    return g_allocations.load() - before;
}

// A fresh cache directory per process, except in the reuse test's second process, which must use
// the one its parent names (a fresh one would hide the stored choice).
const auto* const kCacheDir =
    std::getenv("KILN_TUNING_TEST_CHILD_CACHE")
        ? nullptr
        : ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

std::vector<float> uniform(std::size_t n, unsigned seed) {
    return kiln::test::random_floats(n, seed);
}

Array random_array(kiln::Dims shape, unsigned seed) {
    return kiln::from_host(uniform(static_cast<std::size_t>(shape.product()), seed), shape);
}

// The bytes of @p a (C order), for bitwise comparisons.
std::vector<float> host(const Array& a) {
    return a.to_host<float>();
}

std::uint32_t bits(float value) {
    std::uint32_t out;
    std::memcpy(&out, &value, sizeof out);
    return out;
}

::testing::AssertionResult bitwise_equal(const std::vector<float>& got,
                                         const std::vector<float>& want) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << got.size() << " values, expected " << want.size();
    for (std::size_t i = 0; i < got.size(); ++i)
        if (bits(got[i]) != bits(want[i]))
            return ::testing::AssertionFailure()
                   << "value " << i << " is " << got[i] << ", untuned " << want[i];
    return ::testing::AssertionSuccess();
}

ElementwiseOptions tuned_elementwise() {
    ElementwiseOptions options;
    options.tune = true;
    return options;
}

ReductionOptions tuned_reduction() {
    ReductionOptions options;
    options.tune = true;
    return options;
}

// The tuning records in the test's cache directory (shared by the tests of a binary run by hand).
std::set<std::filesystem::path> records() {
    std::set<std::filesystem::path> found;
    const char* dir = std::getenv("KILN_CACHE_DIR");
    if (!dir || !std::filesystem::exists(dir)) return found;
    for (const auto& item : std::filesystem::recursive_directory_iterator(dir))
        if (item.path().extension() == ".tune") found.insert(item.path());
    return found;
}

// The records in @p now that are not in @p before.
std::vector<std::filesystem::path> added(const std::set<std::filesystem::path>& before,
                                         const std::set<std::filesystem::path>& now) {
    std::vector<std::filesystem::path> out;
    for (const auto& path : now)
        if (!before.count(path)) out.push_back(path);
    return out;
}

const char* const kOperation = "z = sinf(x) * y + x / (y * y + 3.0f)";

} // namespace

TEST(Tuning, TunedElementwiseGivesTheUntunedResultsBitwise) {
    KILN_REQUIRE_GPU();
    const ElementwiseKernel plain("float32 x, float32 y", "float32 z", kOperation, "tune_ew");
    const ElementwiseKernel tuned("float32 x, float32 y", "float32 z", kOperation, "tune_ew",
                                  tuned_elementwise());
    const Array big = random_array({(1 << 21) + 3}, 1);
    const Array big_y = random_array({(1 << 21) + 3}, 2);
    const Array rows_x = random_array({300, 1000}, 3), rows_y = random_array({1000}, 4);
    // Every other element: a 1-D loop with stride 2, the strided layout.
    const Array strided_x = big.slice({Slice::range(0, big.size(), 2)});
    const Array strided_y = big_y.slice({Slice::range(0, big.size(), 2)});

    const std::set<std::filesystem::path> records_before = records();
    const TuningStatistics before = kiln::tuning_statistics();
    struct Case {
        const char* name;
        const Array &x, &y;
    };
    for (const Case& c : {Case{"flat", big, big_y}, Case{"rows", rows_x, rows_y},
                          Case{"strided", strided_x, strided_y}}) {
        SCOPED_TRACE(c.name);
        const std::vector<float> want = host(plain(c.x, c.y)[0]);
        EXPECT_TRUE(bitwise_equal(host(tuned(c.x, c.y)[0]), want)); // the call that tunes
        EXPECT_TRUE(bitwise_equal(host(tuned(c.x, c.y)[0]), want)); // the tuned launch
    }
    const TuningStatistics after = kiln::tuning_statistics();
    EXPECT_EQ(after.tunings - before.tunings, 3u);
    EXPECT_GE(after.candidates_timed - before.candidates_timed, 3u * 2);
    EXPECT_EQ(after.disk_stores - before.disk_stores, 3u);
    EXPECT_EQ(added(records_before, records()).size(), 3u);
}

TEST(Tuning, TunedReductionGivesTheUntunedResultsBitwise) {
    KILN_REQUIRE_GPU();
    // A float32 sum: any change in the order elements are combined changes its last bits.
    const ReductionKernel plain("float32 x", "float32 y", "x", "a + b", "y = a", "0", "tune_sum");
    const ReductionKernel tuned("float32 x", "float32 y", "x", "a + b", "y = a", "0", "tune_sum",
                                tuned_reduction());
    struct Case {
        const char* name;
        kiln::Dims shape;
        Axes axis;
    };
    const TuningStatistics before = kiln::tuning_statistics();
    int seed = 10;
    const std::vector<Case> cases{
        {"to a scalar, split across blocks", {1 << 22}, Axes{}},
        {"a warp per output", {20000, 64}, Axes{1}},
        {"a block per output, split", {64, 50000}, Axes{1}},
        {"a block per output", {8192, 3000}, Axes{1}},
        {"columns (outer layout)", {4096, 512}, Axes{0}},
        {"columns in many batches (a capped grid loops over them)", {1024, 64, 512}, Axes{1}},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        const Array x = random_array(c.shape, static_cast<unsigned>(++seed));
        ReduceCall how;
        how.axis = c.axis;
        const std::vector<float> want = host(plain(how, x)[0]);
        EXPECT_TRUE(bitwise_equal(host(tuned(how, x)[0]), want));
        EXPECT_TRUE(bitwise_equal(host(tuned(how, x)[0]), want));
        // The same through the per-call switch of the untuned kernel.
        how.tune = true;
        EXPECT_TRUE(bitwise_equal(host(plain(how, x)[0]), want));
    }
    const TuningStatistics after = kiln::tuning_statistics();
    // Each case's class once by the tuned kernel; the per-call switch on the other instance finds
    // the stored choice.
    EXPECT_EQ(after.tunings - before.tunings, cases.size());
    EXPECT_EQ(after.disk_hits - before.disk_hits, cases.size());
}

TEST(Tuning, CandidatesNeverWriteTheCallersOutputs) {
    KILN_REQUIRE_GPU();
    const std::size_t n = 1 << 20;
    const std::vector<float> x0 = uniform(n, 21);
    const Array x = kiln::from_host(x0);
    // An operation that reads its output: had a candidate run on the caller's array, the result
    // would hold x added more than once.
    const ElementwiseKernel accumulate("float32 x", "float32 y", "y = y + x", "tune_accumulate",
                                       tuned_elementwise());
    const Array y = kiln::full({static_cast<std::int64_t>(n)}, 1000.0, DType::float32);
    const TuningStatistics before = kiln::tuning_statistics();
    accumulate(x, y);
    EXPECT_EQ(kiln::tuning_statistics().tunings - before.tunings, 1u);
    const std::vector<float> got = host(y);
    for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], 1000.0f + x0[i]) << "element " << i;

    // The output is the input: written once, by the real call.
    const ElementwiseKernel increment("float32 x", "float32 y", "y = x + 1.0f", "tune_in_place",
                                      tuned_elementwise());
    const Array z = kiln::from_host(x0);
    increment(z, z);
    const std::vector<float> incremented = host(z);
    for (std::size_t i = 0; i < n; ++i)
        ASSERT_EQ(incremented[i], x0[i] + 1.0f) << "element " << i;

    // A raw input the operation writes: candidates write a copy.
    const ElementwiseKernel count_calls("raw float32 t, float32 x", "float32 y",
                                        "y = x; if (i == 0) t[0] += 1.0f", "tune_raw_write",
                                        tuned_elementwise());
    const Array t = kiln::full({1}, 0.0, DType::float32);
    count_calls(t, x);
    EXPECT_EQ(host(t)[0], 1.0f);

    // A reduction whose post-map reads its output.
    const ReductionKernel add_sum("float32 x", "float32 y", "x", "a + b", "y = y + a", "0",
                                  "tune_add_sum", tuned_reduction());
    const ReductionKernel add_sum_plain("float32 x", "float32 y", "x", "a + b", "y = y + a", "0",
                                        "tune_add_sum");
    const Array m = random_array({20000, 64}, 22);
    const Array out = kiln::full({20000}, 1000.0, DType::float32);
    const Array want = kiln::full({20000}, 1000.0, DType::float32);
    ReduceCall rows;
    rows.axis = Axes{1};
    add_sum(rows, m, out);
    add_sum_plain(rows, m, want);
    EXPECT_TRUE(bitwise_equal(host(out), host(want)));
}

TEST(Tuning, SecondInstanceReusesTheStoredChoiceWithoutTiming) {
    KILN_REQUIRE_GPU();
    const Array x = random_array({1 << 20}, 31), y = random_array({1 << 20}, 32);
    const std::set<std::filesystem::path> records_before = records();
    const TuningStatistics start = kiln::tuning_statistics();
    std::vector<float> first;
    {
        const ElementwiseKernel k("float32 x, float32 y", "float32 z", kOperation, "tune_reuse",
                                  tuned_elementwise());
        first = host(k(x, y)[0]);
        k(x, y); // the memory table: nothing more
    }
    const TuningStatistics tuned = kiln::tuning_statistics();
    EXPECT_EQ(tuned.tunings - start.tunings, 1u);
    EXPECT_EQ(tuned.disk_stores - start.disk_stores, 1u);
    EXPECT_EQ(tuned.disk_hits - start.disk_hits, 0u);
    ASSERT_EQ(added(records_before, records()).size(), 1u);

    // A new instance of the same kernel, as a new process would make: the stored choice, no
    // timing.
    const ElementwiseKernel again("float32 x, float32 y", "float32 z", kOperation, "tune_reuse",
                                  tuned_elementwise());
    EXPECT_TRUE(bitwise_equal(host(again(x, y)[0]), first));
    const TuningStatistics reused = kiln::tuning_statistics();
    EXPECT_EQ(reused.tunings, tuned.tunings);
    EXPECT_EQ(reused.candidates_timed, tuned.candidates_timed);
    EXPECT_EQ(reused.disk_hits - tuned.disk_hits, 1u);

    // Another shape class is tuned on its own.
    const Array small_x = random_array({5000}, 33), small_y = random_array({5000}, 34);
    again(small_x, small_y);
    EXPECT_EQ(kiln::tuning_statistics().tunings - reused.tunings, 1u);
    EXPECT_EQ(added(records_before, records()).size(), 2u);
}

TEST(Tuning, DamagedRecordIsTunedAgain) {
    KILN_REQUIRE_GPU();
    const Array x = random_array({1 << 20}, 41), y = random_array({1 << 20}, 42);
    const std::set<std::filesystem::path> records_before = records();
    std::vector<float> want;
    {
        const ElementwiseKernel k("float32 x, float32 y", "float32 z", kOperation, "tune_damage",
                                  tuned_elementwise());
        want = host(k(x, y)[0]);
    }
    const std::vector<std::filesystem::path> found = added(records_before, records());
    ASSERT_EQ(found.size(), 1u);
    std::filesystem::resize_file(found[0], std::filesystem::file_size(found[0]) - 1);
    const TuningStatistics before = kiln::tuning_statistics();
    const ElementwiseKernel again("float32 x, float32 y", "float32 z", kOperation, "tune_damage",
                                  tuned_elementwise());
    EXPECT_TRUE(bitwise_equal(host(again(x, y)[0]), want));
    const TuningStatistics after = kiln::tuning_statistics();
    EXPECT_EQ(after.rejected - before.rejected, 1u);
    EXPECT_EQ(after.tunings - before.tunings, 1u);
    EXPECT_EQ(after.disk_stores - before.disk_stores, 1u); // replaced by a good one
}

TEST(Tuning, ScopeTunesReadyOperationsAndGivenBlockSizesAreKept) {
    KILN_REQUIRE_GPU();
    const Array x = random_array({1 << 22}, 51);
    const std::vector<float> want = host(kiln::sum(x));
    const TuningStatistics before = kiln::tuning_statistics();
    {
        kiln::TuningScope scope;
        EXPECT_TRUE(bitwise_equal(host(kiln::sum(x)), want));
    }
    const TuningStatistics after = kiln::tuning_statistics();
    EXPECT_EQ(after.tunings - before.tunings, 1u);
    kiln::sum(x); // outside the scope: untuned, nothing counted
    EXPECT_EQ(kiln::tuning_statistics().tunings, after.tunings);

    // A call that gives its block size keeps it: nothing is tuned.
    const ElementwiseKernel k("float32 x, float32 y", "float32 z", kOperation, "tune_given",
                              tuned_elementwise());
    CallOptions options;
    options.block_size = 128;
    k(options, x, x);
    const TuningStatistics given = kiln::tuning_statistics();
    EXPECT_EQ(given.tunings, after.tunings);
    EXPECT_EQ(given.skipped, after.skipped);
}

TEST(Tuning, TunedHotCallAllocatesNoMoreThanAnUntunedOne) {
    KILN_REQUIRE_GPU();
    const ElementwiseKernel plain("float32 x, float32 y", "float32 z", kOperation, "tune_hot");
    const ElementwiseKernel tuned("float32 x, float32 y", "float32 z", kOperation, "tune_hot",
                                  tuned_elementwise());
    const Array x = random_array({1 << 20}, 61), y = random_array({1 << 20}, 62);
    const Array z = kiln::empty({1 << 20}, DType::float32);
    for (int k = 0; k < 2; ++k) { // the first tuned call tunes; then both are hot
        plain(x, y, z);
        tuned(x, y, z);
    }
    const long untuned = allocations_in([&] { plain(x, y, z); });
    EXPECT_EQ(allocations_in([&] { tuned(x, y, z); }), untuned);

    const ReductionKernel plain_sum("float32 x", "float32 y", "x", "a + b", "y = a", "0",
                                    "tune_hot_sum");
    const ReductionKernel tuned_sum("float32 x", "float32 y", "x", "a + b", "y = a", "0",
                                    "tune_hot_sum", tuned_reduction());
    const Array m = random_array({20000, 64}, 63);
    const Array out = kiln::empty({20000}, DType::float32);
    ReduceCall rows;
    rows.axis = Axes{1};
    for (int k = 0; k < 2; ++k) {
        plain_sum(rows, m, out);
        tuned_sum(rows, m, out);
    }
    const long untuned_sum = allocations_in([&] { plain_sum(rows, m, out); });
    EXPECT_EQ(allocations_in([&] { tuned_sum(rows, m, out); }), untuned_sum);
    kiln::Device::current().synchronize();
}

TEST(Tuning, CallsCapturedIntoAGraphRunUntunedAndTuneLater) {
    KILN_REQUIRE_GPU();
    const ElementwiseKernel plain("float32 x, float32 y", "float32 z", kOperation, "tune_graph");
    const ElementwiseKernel tuned("float32 x, float32 y", "float32 z", kOperation, "tune_graph",
                                  tuned_elementwise());
    const kiln::Stream stream;
    const Array x = random_array({1 << 20}, 71), y = random_array({1 << 20}, 72);
    const Array z = kiln::empty({1 << 20}, DType::float32);
    const std::vector<float> want = host(plain(x, y)[0]);
    CallOptions on;
    on.stream = stream;
    CallOptions default_block = on; // loads the default specialization, untuned, before capture
    default_block.block_size = 256;
    tuned(default_block, x, y, z);
    stream.synchronize();

    const TuningStatistics before = kiln::tuning_statistics();
    kiln::Graph graph = kiln::Graph::capture(stream, [&] { tuned(on, x, y, z); });
    EXPECT_EQ(kiln::tuning_statistics().tunings, before.tunings); // nothing ran while captured
    const std::vector<float> poison(1 << 20, std::nanf(""));
    z.copy_from_host_bytes(poison.data(), stream); // so only the graph's launch can fill z
    graph.instantiate().launch(stream);
    stream.synchronize();
    EXPECT_TRUE(bitwise_equal(host(z), want));

    tuned(on, x, y, z); // outside a capture: tuned now
    stream.synchronize();
    EXPECT_EQ(kiln::tuning_statistics().tunings - before.tunings, 1u);
    EXPECT_TRUE(bitwise_equal(host(z), want));
}

// The kernel and data of the two-process test, the same in both.
void call_reuse_kernel() {
    const ElementwiseKernel k("float32 x, float32 y", "float32 z", kOperation, "tune_process",
                              tuned_elementwise());
    k(random_array({1 << 20}, 81), random_array({1 << 20}, 82));
    kiln::Device::current().synchronize();
}

// The second process of SecondProcessReusesTheStoredChoiceWithoutTiming (skipped otherwise): the
// same call in the first process's cache directory, its counters printed.
TEST(Tuning, ChildProcessOfTheReuseTest) {
    const char* dir = std::getenv("KILN_TUNING_TEST_CHILD_CACHE");
    if (!dir) GTEST_SKIP() << "run by SecondProcessReusesTheStoredChoiceWithoutTiming";
    // Set by the parent in this process's environment, as for any program: Kiln reads its
    // settings while it loads the driver (kiln::prepare()), before a test body could change them.
    const char* cache = std::getenv("KILN_CACHE_DIR");
    ASSERT_TRUE(cache && std::string(cache) == dir) << "the parent sets KILN_CACHE_DIR";
    KILN_REQUIRE_GPU();
    call_reuse_kernel();
    const TuningStatistics s = kiln::tuning_statistics();
    std::printf("KILN_CHILD tunings=%llu disk_hits=%llu\n",
                static_cast<unsigned long long>(s.tunings),
                static_cast<unsigned long long>(s.disk_hits));
}

TEST(Tuning, SecondProcessReusesTheStoredChoiceWithoutTiming) {
    KILN_REQUIRE_GPU();
    const TuningStatistics before = kiln::tuning_statistics();
    call_reuse_kernel();
    ASSERT_EQ(kiln::tuning_statistics().tunings - before.tunings, 1u);
    const char* dir = std::getenv("KILN_CACHE_DIR");
    ASSERT_NE(dir, nullptr);
    // This test binary, named here: /proc/self in the shell would be the shell.
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const kiln::test::CommandResult child =
        kiln::test::run_command("KILN_TUNING_TEST_CHILD_CACHE='" + std::string(dir) +
                                "' KILN_CACHE_DIR='" + std::string(dir) + "' '" + self +
                                "' --gtest_filter=Tuning.ChildProcessOfTheReuseTest 2>&1");
    ASSERT_EQ(child.status, 0) << child.out << child.err;
    std::smatch m;
    ASSERT_TRUE(
        std::regex_search(child.out, m, std::regex("KILN_CHILD tunings=(\\d+) disk_hits=(\\d+)")))
        << child.out;
    EXPECT_EQ(m[1], "0") << "the second process timed candidates";
    EXPECT_EQ(m[2], "1") << "the second process did not read the stored choice";
}
