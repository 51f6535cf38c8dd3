// kiln::fuse splitting a traced graph into kernels, without a GPU: arrays used after a reduction
// and several reductions (the split plan: a kernel per reduction and one elementwise kernel; the
// row plan: one kernel of a block per row), in-place updates (x += y, kiln::copyto, functions
// that return nothing) and complex literals. Sources are checked and every kernel compiled by
// NVRTC for sm_90 over arrays described with Array::wrap; nothing is launched. With the fake
// driver (KILN_DRIVER_LIBRARY, the _fake_driver variant), calls run down to cuLaunchKernel and
// the launches are counted.

#include "run_command.hpp"
#include "temp_dir.hpp"

#include "kiln/fuse.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <complex>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::FusionError;

namespace {

Array fake(const kiln::Dims& shape, DType dtype = DType::float32) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

template <class F>
std::vector<std::string> sources(const F& fused, std::initializer_list<Arg> args) {
    return fused.sources_for(args.begin(), args.size());
}

template <class F> void compiles(const F& fused, std::initializer_list<Arg> args, std::size_t n) {
    try {
        const auto programs = fused.programs_for(args.begin(), args.size(), "sm_90");
        EXPECT_EQ(programs.size(), n);
        for (const auto& p : programs)
            EXPECT_TRUE(p && !p->cubin().empty());
    } catch (const kiln::CompileError& e) {
        FAIL() << e.what() << "\n" << e.source();
    }
}

template <class E> std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

auto softmax_function = [](auto x) {
    auto e = kiln::exp(x - kiln::max(x, -1, {true}));
    return e / kiln::sum(e, -1, {true});
};

} // namespace

TEST(FuseGraph, SoftmaxOverContiguousRowsIsOneKernelOfABlockPerRow) {
    auto softmax = kiln::fuse("softmax", softmax_function);
    Array x = fake({64, 1000});
    const auto src = sources(softmax, {x});
    ASSERT_EQ(src.size(), 1u);
    EXPECT_TRUE(has(src[0], "one kernel, a block per row")) << src[0];
    EXPECT_TRUE(has(src[0], "extern \"C\" __global__ void __launch_bounds__(1024) softmax("))
        << src[0];
    // Three passes over a row (the max, the sum, the outputs), each element by element and by
    // vectors of four.
    auto count = [&](const std::string& part) {
        int n = 0;
        for (std::size_t at = src[0].find(part); at != std::string::npos;
             at = src[0].find(part, at + 1))
            ++n;
        return n;
    };
    EXPECT_EQ(count("for (long long _j = threadIdx.x;"), 3) << src[0];
    EXPECT_EQ(count("for (long long _j0 = (long long)threadIdx.x * 4;"), 3) << src[0];
    EXPECT_EQ(count("*reinterpret_cast<const kiln::Vec<float, 4>*>(_p_in0 + _row * _cols + _j0)"),
              3)
        << src[0];
    EXPECT_TRUE(has(src[0], "*reinterpret_cast<kiln::Vec<float, 4>*>(_p_out0 + _row * _cols + _j0) "
                            "= _w_out0;"))
        << src[0];
    EXPECT_TRUE(has(src[0], "// traced: max(in0, axis=-1, keepdims=true)")) << src[0];
    // Rows of a block (threadIdx.y) or of a grid: the row count is a parameter.
    EXPECT_TRUE(has(src[0], "const long long _rows, const long long _cols, const int _vec)"))
        << src[0];
    compiles(softmax, {x}, 1);
    EXPECT_EQ(softmax.traces(), 1u);
}

TEST(FuseGraph, SoftmaxOverAStridedViewSplitsIntoTwoReductionsAndAnElementwiseKernel) {
    auto softmax = kiln::fuse("softmax_split", softmax_function);
    Array xt = fake({1000, 64}).transpose(); // rows not contiguous: the split plan
    const auto src = sources(softmax, {xt});
    ASSERT_EQ(src.size(), 3u);
    EXPECT_TRUE(has(src[0], "kernel 1 of 3, softmax_split_1: the reduction max(in0")) << src[0];
    EXPECT_TRUE(has(src[1], "kernel 2 of 3, softmax_split_2: the reduction sum(")) << src[1];
    EXPECT_TRUE(has(src[2], "kernel 3 of 3, softmax_split_3: elementwise")) << src[2];
    // The second reads the first's result; the last reads both and the argument.
    EXPECT_TRUE(has(src[1], "exp(")) << src[1];
    EXPECT_TRUE(has(src[2], "softmax_split_3(")) << src[2];
    compiles(softmax, {xt}, 3);
    // One trace for the signature, whichever plan a call takes.
    Array x = fake({64, 1000});
    EXPECT_EQ(sources(softmax, {x}).size(), 1u);
    EXPECT_EQ(softmax.traces(), 1u);
    // The joined source holds them all, in launch order.
    const Arg args[] = {xt};
    const std::string all = softmax.source_for(args, 1);
    EXPECT_LT(all.find("kernel 1 of 3"), all.find("kernel 2 of 3"));
    EXPECT_LT(all.find("kernel 2 of 3"), all.find("kernel 3 of 3"));
}

TEST(FuseGraph, AnArrayUsedAfterItsReductionOverAnotherAxis) {
    auto centered = kiln::fuse("centered", [](auto x) { return x - kiln::mean(x, 0, {true}); });
    Array x = fake({128, 256});
    const auto src = sources(centered, {x});
    ASSERT_EQ(src.size(), 2u); // axis 0 is no row: a reduction, then the difference
    EXPECT_TRUE(has(src[0], "mean(in0, axis=0, keepdims=true)")) << src[0];
    EXPECT_TRUE(has(src[1], "in0 - t1")) << src[1];
    compiles(centered, {x}, 2);
}

TEST(FuseGraph, TwoReductionsOfTwoInputsAndOneOfAnother) {
    auto ratio = kiln::fuse("ratio", [](auto x, auto y) { return kiln::sum(x) + kiln::max(y); });
    Array x = fake({1000}), y = fake({77, 3});
    const auto src = sources(ratio, {x, y});
    ASSERT_EQ(src.size(), 3u);
    // The last kernel reads both results (nodes 2 and 3, in the order C++ evaluated them).
    EXPECT_TRUE(has(src[2], "t2 + t3") || has(src[2], "t3 + t2")) << src[2];
    compiles(ratio, {x, y}, 3);

    // A reduction of a reduction: the second takes the first's result; the outputs after it are
    // its post-map.
    auto nested = kiln::fuse("nested", [](auto v) { return kiln::max(kiln::sum(v, 1)) * 2; });
    Array v = fake({16, 32});
    const auto two = sources(nested, {v});
    ASSERT_EQ(two.size(), 2u);
    EXPECT_TRUE(has(two[1], "kiln_map(const float t1)")) << two[1];
    compiles(nested, {v}, 2);

    // Outputs on both sides of a reduction: its kernel writes one, an elementwise one the other;
    // over rows, the row kernel writes both.
    auto mixed =
        kiln::fuse("mixed_outputs", [](auto a) { return std::make_tuple(kiln::sum(a, 0), a * 2); });
    Array a = fake({16, 16});
    EXPECT_EQ(sources(mixed, {a}).size(), 2u);
    compiles(mixed, {a}, 2);
    auto mixed_rows =
        kiln::fuse("mixed_rows", [](auto b) { return std::make_tuple(kiln::sum(b, 1), b * 2); });
    const auto rows = sources(mixed_rows, {a});
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_TRUE(has(rows[0], "_p_out0[_row] = t")) << "the sum, one per row: " << rows[0];
    compiles(mixed_rows, {a}, 1);
}

TEST(FuseGraph, RowStatisticsAndAScalarArgumentInTheRowKernel) {
    // Layer normalization: the mean and the variance over a row, with eps a parameter.
    auto layer_norm = kiln::fuse("layer_norm", [](auto x, auto eps) {
        auto centered = x - kiln::mean(x, -1, {true});
        auto variance = kiln::mean(centered * centered, -1, {true});
        return std::make_tuple(centered / kiln::sqrt(variance + eps), variance);
    });
    Array x = fake({32, 768});
    const auto src = sources(layer_norm, {x, 1e-5});
    ASSERT_EQ(src.size(), 1u);
    EXPECT_TRUE(has(src[0], "const double in1")) << src[0];
    EXPECT_TRUE(has(src[0], "_p_out1[_row] =")) << "the variance, once per row: " << src[0];
    compiles(layer_norm, {x, 1e-5}, 1);
    // argmax per row: its index is the column.
    auto best = kiln::fuse("best_shifted",
                           [](auto v) { return kiln::argmax(v - kiln::min(v, -1, {true}), -1); });
    Array w = fake({8, 100}, DType::float64);
    ASSERT_EQ(sources(best, {w}).size(), 1u);
    compiles(best, {w}, 1);
}

TEST(FuseGraph, RowKernelsOfEveryKindOfDtypeCompile) {
    auto stats = kiln::fuse("row_stats", [](auto x) {
        auto centered = x - kiln::mean(x, -1, {true});
        return std::make_tuple(kiln::abs(centered) * 2, kiln::max(x, -1, {true}));
    });
    for (DType dtype : {DType::float16, DType::float64, DType::int32, DType::uint8}) {
        Array x = fake({16, 300}, dtype);
        const auto src = sources(stats, {x});
        ASSERT_EQ(src.size(), 1u) << kiln::name(dtype);
        compiles(stats, {x}, 1);
    }
    // Complex rows: the mean and NumPy's order for the max.
    Array z = fake({16, 300}, DType::complex64);
    ASSERT_EQ(sources(stats, {z}).size(), 1u);
    compiles(stats, {z}, 1);
    // Per-row values without keepdims, used among themselves: one per row, of shape (rows,).
    auto spread =
        kiln::fuse("row_spread", [](auto x) { return kiln::max(x, -1) - kiln::min(x, -1); });
    Array f = fake({16, 300});
    const auto src = sources(spread, {f});
    ASSERT_EQ(src.size(), 1u);
    EXPECT_TRUE(has(src[0], "_p_out0[_row] =")) << src[0];
    compiles(spread, {f}, 1);
    // Without keepdims beside the elements, they would broadcast by the last axis, as NumPy
    // does: no row plan, the split one.
    auto misaligned = kiln::fuse("row_misaligned",
                                 [](auto x) { return x - kiln::max(x, -1) - kiln::min(x, -1); });
    Array square = fake({64, 64});
    EXPECT_EQ(sources(misaligned, {square}).size(), 3u);
}

TEST(FuseGraph, CompoundAssignmentUpdatesTheArgumentAndTheFunctionMayReturnNothing) {
    auto axpy = kiln::fuse("axpy_in_place", [](auto y, auto a, auto x) { y += a * x; });
    Array y = fake({4096}), x = fake({4096});
    const auto src = sources(axpy, {y, 2.0, x});
    ASSERT_EQ(src.size(), 1u);
    EXPECT_TRUE(has(src[0], "out0 = t")) << src[0];
    compiles(axpy, {y, 2.0, x}, 1);

    // Updates beside outputs, and the argument returned after its update.
    auto both = kiln::fuse("update_and_return", [](auto u, auto v) {
        u *= 2;
        auto w = u + v;
        kiln::copyto(v, w);
        return std::make_tuple(u, w * 3);
    });
    Array u = fake({64, 64}), v = fake({64, 64});
    const auto two = sources(both, {u, v});
    ASSERT_EQ(two.size(), 1u);
    compiles(both, {u, v}, 1);

    // A reduction feeding an update: the reduction, then the elementwise kernel that writes.
    auto normalize = kiln::fuse("normalize_in_place", [](auto m) { m /= kiln::sum(m, 0); });
    Array m = fake({10, 20});
    EXPECT_EQ(sources(normalize, {m}).size(), 2u);
    compiles(normalize, {m}, 2);
}

TEST(FuseGraph, UpdatesCastBySameKindAsNumPy) {
    Array i32 = fake({16}, DType::int32), f32 = fake({16}), u8 = fake({16}, DType::uint8);
    auto add_float = kiln::fuse("int_plus_float", [](auto x) { x += 1.5; });
    std::string message = error_of<FusionError>([&] { sources(add_float, {i32}); });
    EXPECT_TRUE(has(message, "same_kind")) << message;
    EXPECT_TRUE(has(message, "int32")) << message;
    auto divide = kiln::fuse("int_divide", [](auto x) { x /= 2; });
    EXPECT_TRUE(has(error_of<FusionError>([&] { sources(divide, {i32}); }), "same_kind"));
    auto copy_float = kiln::fuse("copy_float", [](auto x, auto y) { kiln::copyto(x, y); });
    EXPECT_TRUE(has(error_of<FusionError>([&] { sources(copy_float, {i32, f32}); }), "same_kind"));
    // Within a kind, or up from a lower one, casts are fine: float32 += float64, float <- int,
    // uint8 <- a weak int.
    auto widen = kiln::fuse("widen", [](auto x, auto y) { kiln::copyto(x, y * 2); });
    EXPECT_EQ(sources(widen, {f32, i32}).size(), 1u);
    compiles(widen, {f32, i32}, 1);
    auto small = kiln::fuse("small", [](auto x) { kiln::copyto(x, 7); });
    EXPECT_EQ(sources(small, {u8}).size(), 1u);
    auto too_big = kiln::fuse("too_big", [](auto x) { kiln::copyto(x, 300); });
    EXPECT_THROW(sources(too_big, {u8}), kiln::OverflowError);
}

TEST(FuseGraph, AFunctionThatReturnsNothingMustUpdateAnArgument) {
    auto nothing = kiln::fuse("does_nothing", [](auto x) { (void)(x * 2); });
    const std::string message = error_of<FusionError>([&] { sources(nothing, {fake({8})}); });
    EXPECT_TRUE(has(message, "returns nothing and updates no array argument")) << message;
    // Updating a scalar argument updates no array.
    auto scalar = kiln::fuse("scalar_update", [](auto x, auto s) {
        s += 1;
        (void)(x * s);
    });
    EXPECT_TRUE(has(error_of<FusionError>([&] {
                        sources(scalar, {fake({8}), 2.0});
                    }),
                    "updates no array argument"));
}

TEST(FuseGraph, ComplexLiteralsPromoteAsNumPysComplexScalars) {
    // std::complex<double> is Python's complex (weak): float32 * 1j is complex64.
    auto rotate = kiln::fuse("rotate", [](auto x) { return x * std::complex<double>(0, 1); });
    Array f32 = fake({256}), f64 = fake({256}, DType::float64), i32 = fake({256}, DType::int32);
    std::string src = sources(rotate, {f32})[0];
    EXPECT_TRUE(has(src, "complex64 out0") || has(src, "kiln::complex<float>* _raw_out0") ||
                has(src, "kiln::complex<float>"))
        << src;
    EXPECT_TRUE(has(src, "kiln::complex<float>(0.0f, 1.0f)")) << src;
    compiles(rotate, {f32}, 1);
    src = sources(rotate, {f64})[0];
    EXPECT_TRUE(has(src, "kiln::complex<double>(0.0, 1.0)")) << src;
    compiles(rotate, {f64}, 1);
    // int32 * complex gives complex128, as NumPy 2 gives.
    auto scaled = kiln::fuse("scaled_complex", [](auto x) {
        auto z = x * std::complex<double>(0.5, -2);
        EXPECT_EQ(z.dtype(), DType::complex128);
        return z;
    });
    compiles(scaled, {i32}, 1);
    // std::complex<float> is a strong complex64: float64 * it is complex128; float32 stays 64.
    auto strong = kiln::fuse("strong_complex", [](auto x) {
        auto z = x * std::complex<float>(1, 2);
        EXPECT_EQ(z.dtype(), x.dtype() == DType::float64 ? DType::complex128 : DType::complex64);
        return z;
    });
    compiles(strong, {f64}, 1);
    compiles(strong, {f32}, 1);
}

// Run by ANewProcessFindsEveryKernelInTheDiskCache in a process of its own: compiles the kernels
// of both plans of softmax for sm_90 and prints what the compiler did.
TEST(FuseGraph, DISABLED_CompileBothPlansOfSoftmax) {
    auto softmax = kiln::fuse("softmax_new_process", softmax_function);
    const Array rows = fake({64, 1000}), split = fake({1000, 64}).transpose();
    const Arg row_args[] = {rows}, split_args[] = {split};
    EXPECT_EQ(softmax.programs_for(row_args, 1, "sm_90").size(), 1u);
    EXPECT_EQ(softmax.programs_for(split_args, 1, "sm_90").size(), 3u);
    const kiln::CompileStatistics stats = kiln::Compiler::global().statistics();
    std::printf("compiles=%llu disk_hits=%llu\n", static_cast<unsigned long long>(stats.compiles),
                static_cast<unsigned long long>(stats.disk_hits));
}

TEST(FuseGraph, ANewProcessFindsEveryKernelInTheDiskCache) {
    const kiln::test::TempDir dir;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    auto child = [&] {
        const auto run =
            kiln::test::run_command("KILN_CACHE_DIR='" + (dir / "cache").string() + "' '" + self +
                                    "' --gtest_also_run_disabled_tests "
                                    "--gtest_filter=FuseGraph.DISABLED_CompileBothPlansOfSoftmax");
        EXPECT_EQ(run.status, 0) << run.out << run.err;
        unsigned long long compiles = 99, disk_hits = 0;
        const std::size_t at = run.out.find("compiles=");
        EXPECT_NE(at, std::string::npos) << run.out;
        if (at != std::string::npos)
            std::sscanf(run.out.c_str() + at, "compiles=%llu disk_hits=%llu", &compiles,
                        &disk_hits);
        return std::make_pair(compiles, disk_hits);
    };
    const auto first = child(), second = child();
    EXPECT_EQ(first.first, 4u) << "the row kernel and the three kernels of the split";
    EXPECT_EQ(second.first, 0u) << "a new process compiles nothing";
    EXPECT_EQ(second.second, 4u) << "it reads all four from the disk cache";
}

namespace {

using LaunchesFunction = unsigned long long (*)();

unsigned long long launches() {
    kiln::Device::count(); // loads the driver
    void* driver = dlopen(std::getenv("KILN_DRIVER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
    static const auto get =
        reinterpret_cast<LaunchesFunction>(dlsym(driver, "kiln_fake_driver_launches"));
    return get();
}

class FuseGraphLaunches : public ::testing::Test {
  protected:
    void SetUp() override {
        if (!std::getenv("KILN_DRIVER_LIBRARY")) GTEST_SKIP() << "needs the fake driver";
    }
};

} // namespace

TEST_F(FuseGraphLaunches, EachPlanLaunchesItsKernelsAndNoMore) {
    auto softmax = kiln::fuse("softmax_launches", softmax_function);
    Array x = kiln::empty({64, 1000}, DType::float32);
    softmax(x); // traces, compiles, loads
    unsigned long long before = launches();
    Array y = softmax(x);
    EXPECT_EQ(launches() - before, 1u) << "the row plan";
    EXPECT_EQ(y.shape(), x.shape());
    Array xt = kiln::empty({1000, 64}, DType::float32).transpose();
    softmax(xt);
    before = launches();
    Array yt = softmax(xt);
    EXPECT_EQ(launches() - before, 3u) << "the split plan";
    EXPECT_EQ(yt.shape(), xt.shape());
    EXPECT_EQ(softmax.traces(), 1u);

    auto two = kiln::fuse("two_sums", [](auto a, auto b) {
        return std::make_tuple(kiln::sum(a, 0), kiln::sum(b) + kiln::max(a));
    });
    Array a = kiln::empty({30, 40}, DType::float32), b = kiln::empty({5}, DType::float64);
    kiln::Outputs out = two(a, b);
    before = launches();
    out = two(a, b);
    EXPECT_EQ(launches() - before, 4u); // three reductions, then their sum
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].shape(), kiln::Dims({40}));
    EXPECT_EQ(out[1].shape(), kiln::Dims{});
    EXPECT_EQ(out[1].dtype(), DType::float64);

    auto in_place = kiln::fuse("add_in_place", [](auto p, auto q) {
        p += q;
        return p;
    });
    Array p = kiln::empty({100}, DType::float32), q = kiln::empty({100}, DType::float32);
    in_place(p, q);
    before = launches();
    Array r = in_place(p, q);
    EXPECT_EQ(launches() - before, 1u);
    EXPECT_EQ(r.data(), p.data()) << "the updated argument is the output";
    // Read through a transposed view of itself: a copy of the view first, then the update.
    Array square = kiln::empty({32, 32}, DType::float32);
    in_place(square, square.transpose());
    before = launches();
    Array s = in_place(square, square.transpose());
    EXPECT_EQ(launches() - before, 2u) << "the copy, then the update";
    EXPECT_EQ(s.data(), square.data());
    // Per-row values without keepdims come out with the rows' shape.
    auto spread =
        kiln::fuse("spread_launches", [](auto v) { return kiln::max(v, -1) - kiln::min(v, -1); });
    Array m = kiln::empty({6, 5, 300}, DType::float32);
    spread(m);
    before = launches();
    Array range = spread(m);
    EXPECT_EQ(launches() - before, 1u);
    EXPECT_EQ(range.shape(), kiln::Dims({6, 5}));
    // The same view twice: no copy.
    before = launches();
    in_place(square, square);
    EXPECT_EQ(launches() - before, 1u);
}

// A one-kernel function that writes only arguments given in order (inputs, then the updated ones)
// is called with them as they are; an input that overlaps an updated argument other than as that
// very view still goes through a copy.
TEST_F(FuseGraphLaunches, AnUpdateOfArgumentsInOrderIsOneCallAndAnOverlapStillCopies) {
    auto fma_into = kiln::fuse("fma_into_launches",
                               [](auto x, auto y, auto b, auto z) { kiln::copyto(z, x * y + b); });
    Array x = kiln::empty({256}, DType::float32), y = kiln::empty({256}, DType::float32),
          z = kiln::empty({256}, DType::float32);
    fma_into(x, y, 1.0f, z);
    unsigned long long before = launches();
    const kiln::Outputs none = fma_into(x, y, 1.0f, z);
    EXPECT_EQ(launches() - before, 1u);
    EXPECT_EQ(none.size(), 0u) << "the function returns nothing";

    auto scale_into = kiln::fuse("scale_into_launches", [](auto v, auto w) {
        kiln::copyto(w, v * 2);
        return w;
    });
    Array square = kiln::empty({32, 32}, DType::float32),
          other = kiln::empty({32, 32}, DType::float32);
    scale_into(other, square);
    before = launches();
    const Array w = scale_into(other, square);
    EXPECT_EQ(launches() - before, 1u);
    EXPECT_EQ(w.data(), square.data()) << "the updated argument is the output";
    scale_into(square.transpose(), square);
    before = launches();
    const Array t = scale_into(square.transpose(), square);
    EXPECT_EQ(launches() - before, 2u) << "the copy of the overlapping view, then the update";
    EXPECT_EQ(t.data(), square.data());
    before = launches();
    scale_into(square, square); // the same view: no copy
    EXPECT_EQ(launches() - before, 1u);

    // Operands out of the call's order (the updated argument first) take the general path, with
    // the same launches.
    auto into_first =
        kiln::fuse("into_first_launches", [](auto out, auto in) { kiln::copyto(out, in + 1); });
    into_first(z, x);
    before = launches();
    into_first(z, x);
    EXPECT_EQ(launches() - before, 1u);
}

TEST(FuseGraph, ACompileErrorInAnyKernelNamesTheTracedExpression) {
    kiln::FuseOptions options;
    options.preamble = "#define tanh(v) kiln_no_such_function(v)";
    auto broken = kiln::fuse(
        "broken_rows",
        [](auto x) { return kiln::tanh(x - kiln::max(x, -1, {true})) / kiln::sum(x, -1, {true}); },
        options);
    for (const Array& x : {fake({64, 256}), fake({256, 64}).transpose()}) { // row plan, split
        const Arg args[] = {x};
        try {
            broken.programs_for(args, 1, "sm_90");
            ADD_FAILURE() << "compiled";
        } catch (const kiln::CompileError& e) {
            const std::string what = e.what();
            EXPECT_TRUE(has(what, "kiln::fuse 'broken_rows' does not compile: the traced "
                                  "expression 'tanh("))
                << what;
        }
    }
}

TEST(FuseGraph, MoreOutputsThanAKernelWritesIsAFusionError) {
    auto many = kiln::fuse("many_outputs", [](auto x) {
        return std::make_tuple(x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7, x + 8, x + 9);
    });
    const std::string message = error_of<FusionError>([&] { sources(many, {fake({8})}); });
    EXPECT_TRUE(has(message, "at most 8")) << message;
}
