// ReductionKernel without a GPU: axes, binding, layouts and generated source, compiled by NVRTC
// for sm_90. Arrays are described with Array::wrap over made-up, aligned addresses: nothing is
// launched.

#include "kiln/kiln.hpp"
#include "kiln/reduction_kernel.hpp"
#include "reduction/reduction_kernel_access.hpp"
#include "reduction/reduction_recipes.hpp"

#include <gtest/gtest.h>

#include <complex>
#include <cstdlib>
#include <functional>
#include <optional>
#include <utility>

using kiln::Array;
using kiln::Axes;
using kiln::DType;
using kiln::ReduceCall;
using kiln::ReductionKernel;

namespace {

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 32;

Array fake(kiln::Dims shape, DType dtype = DType::float32) {
    static CUdeviceptr next = kBase;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

std::string source(const ReductionKernel& k, std::initializer_list<kiln::Arg> args,
                   const ReduceCall& how = {}) {
    return k.source_for(args.begin(), args.size(), how);
}

void compiles(const ReductionKernel& k, std::initializer_list<kiln::Arg> args,
              const ReduceCall& how = {}) {
    try {
        k.compile_for(args.begin(), args.size(), how, "sm_90");
    } catch (const kiln::CompileError& e) {
        FAIL() << e.what();
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

ReductionKernel l2norm() {
    return ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
}

} // namespace

TEST(ReductionCodegen, EverythingToAScalarSplitsOneOutputAcrossBlocksWithVectorLoads) {
    const auto k = l2norm();
    Array x = fake({1 << 20});
    const std::string src = source(k, {x});
    EXPECT_TRUE(has(src, "kiln::Vec<float, 4>")) << src;
    EXPECT_TRUE(has(src, "atomicAdd(_kiln_p._kiln_counters"))
        << "split outputs combine in the last block";
    EXPECT_TRUE(has(src, "kiln::block_reduce<512>")) << src;
    compiles(k, {x});
}

std::size_t count(const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
        ++n;
    return n;
}

TEST(ReductionCodegen, ASplitOutputCombinesThroughTheBlocksOwnReduceAndPostMap) {
    // One copy of the block reduction and of the post-map (NVRTC compiled two), and the loop over
    // the partial results left rolled: a smaller kernel to compile, combined in the same order.
    const auto k = l2norm();
    const std::string src = source(k, {fake({1 << 20})});
    EXPECT_EQ(count(src, "kiln::block_reduce<"), 1u) << src;
    EXPECT_EQ(count(src, "kiln_post_map(_kiln_acc.v"), 1u) << src;
    EXPECT_TRUE(has(src, "#pragma unroll 1\n            for (kiln_index_t _kiln_t = threadIdx.x"))
        << src;
    compiles(k, {fake({1 << 20})});
}

TEST(ReductionCodegen, RowsTooShortToSplitGetAKernelWithoutTheSplitPath) {
    // 4096 floats a row: 1024 vectors, under the two rounds of 8 per thread of a 256-thread block
    // that a split needs on any device. The kernel is the split kernel's path for one block per
    // output, its accumulation loops kept rolled (a constant step LLVM would unroll further).
    const auto k = l2norm();
    const Array rows = fake({4096, 4096});
    const std::string src = source(k, {rows}, ReduceCall{1});
    EXPECT_FALSE(has(src, "_kiln_S")) << src;
    EXPECT_FALSE(has(src, "atomicAdd")) << src;
    EXPECT_FALSE(has(src, "kiln_acc*>(_kiln_p._kiln_partials)")) << src;
    EXPECT_TRUE(has(src, "for (kiln_index_t _i = blockIdx.x; _i < _kiln_p._kiln_n_out;")) << src;
    EXPECT_EQ(count(src, "#pragma unroll 1"), 2u) << src;
    EXPECT_EQ(count(src, "kiln::block_reduce<256>"), 1u) << src;
    EXPECT_TRUE(has(src, "kiln::Vec<float, 4>")) << src;
    compiles(k, {rows}, ReduceCall{1});
    // The boundary: 4096 vectors a row (16384 floats) can split, 4095 cannot.
    const std::string split_src = source(k, {fake({1024, 16384})}, ReduceCall{1});
    EXPECT_TRUE(has(split_src, "atomicAdd(_kiln_p._kiln_counters")) << split_src;
    EXPECT_FALSE(has(source(k, {fake({1024, 16380})}, ReduceCall{1}), "atomicAdd"));
    // So can everything to a scalar.
    EXPECT_TRUE(has(source(k, {fake({1 << 20})}), "atomicAdd(_kiln_p._kiln_counters"));
}

TEST(ReductionCodegen, ContiguousInnerAxesGetABlockOrAWarpPerRow) {
    const auto k = l2norm();
    Array long_rows = fake({1024, 8192});
    const std::string block_src = source(k, {long_rows}, ReduceCall{1});
    EXPECT_TRUE(has(block_src, "kiln::block_reduce<")) << block_src;
    EXPECT_TRUE(has(block_src, "kiln::Vec<float, 4>"));
    compiles(k, {long_rows}, ReduceCall{1});
    Array short_rows = fake({1 << 16, 384});
    const std::string warp_src = source(k, {short_rows}, ReduceCall{-1});
    EXPECT_TRUE(has(warp_src, "kiln::warp_reduce(_kiln_acc)")) << warp_src;
    EXPECT_FALSE(has(warp_src, "kiln::block_reduce<"));
    // The step is the constant 32, which LLVM would unroll beyond Kiln's four loads per lane.
    // Rows of 384 floats are 96 vectors, three a lane: only the rolled loop (see below).
    EXPECT_EQ(count(warp_src, "#pragma unroll 1"), 1u) << warp_src;
    compiles(k, {short_rows}, ReduceCall{-1});
    // Rows of 256 floats, 64 vectors: 16 lanes a row with their four loads each in flight.
    const std::string shorter_src = source(k, {fake({1 << 16, 256})}, ReduceCall{-1});
    EXPECT_TRUE(has(shorter_src, "kiln::warp_reduce<16>(_kiln_acc)")) << shorter_src;
    EXPECT_EQ(count(shorter_src, "#pragma unroll 1"), 2u) << shorter_src;
    const std::string longer_src = source(k, {fake({1 << 16, 1024})}, ReduceCall{-1});
    EXPECT_TRUE(has(longer_src, "kiln::warp_reduce(_kiln_acc)")) << longer_src;
    EXPECT_EQ(count(longer_src, "#pragma unroll 1"), 2u) << longer_src;
}

TEST(ReductionCodegen, AnUnrolledLoopNoThreadEntersIsLeftOut) {
    // The unrolled loop takes four steps at once; a thread that starts at vector t < step enters
    // it only where the output has more than three steps' worth of vectors. Below that the kernel
    // has the rolled loop alone, one accumulator and no merges (NVRTC: a fifth less to compile).
    const auto k = l2norm();
    auto unrolled = [&](const Array& x, const ReduceCall& how) {
        const std::string src = source(k, {x}, how);
        const bool loop = has(src, "for (; _kiln_jv + 3 * (");
        if (!has(src, "_kiln_acc[")) { // a row's accumulators, not a column's per-lane ones
            EXPECT_EQ(loop, has(src, "kiln_acc _kiln_acc_u1;")) << src;
            EXPECT_EQ(loop, has(src, "_kiln_acc.merge(_kiln_acc_u3);")) << src;
        }
        return loop;
    };
    // A block of 256 per row: 768 vectors (3072 floats) and 769.
    EXPECT_FALSE(unrolled(fake({1024, 1024}), ReduceCall{1}));
    EXPECT_FALSE(unrolled(fake({600, 3072}), ReduceCall{1}));
    EXPECT_TRUE(unrolled(fake({600, 3076}), ReduceCall{1}));
    // A warp per row: 96 vectors and 97; rows sharing a warp take all four loads in it.
    EXPECT_FALSE(unrolled(fake({5001, 384}), ReduceCall{1}));
    EXPECT_TRUE(unrolled(fake({5001, 388}), ReduceCall{1}));
    EXPECT_TRUE(unrolled(fake({5001, 64}), ReduceCall{1}));
    // Columns, 8 rows of threads a block (32 rows or more): every thread has 4 rows at least.
    // Fewer rows: a thread reads every row of its column, all in the unrolled loop's copies.
    EXPECT_TRUE(unrolled(fake({32, 1000}), ReduceCall{0}));
    EXPECT_TRUE(unrolled(fake({4, 1000}), ReduceCall{0}));
    // A split kernel always has it.
    EXPECT_TRUE(unrolled(fake({1 << 20}), ReduceCall{}));
    compiles(k, {fake({600, 3072})}, ReduceCall{1});
    compiles(k, {fake({24, 1000})}, ReduceCall{0});
}

TEST(ReductionCodegen, RowsShorterThanAWarpsLoadsShareAWarp) {
    // Rows of 64 floats are 16 vectors: 4 lanes a row with 4 loads each in flight (the unrolled
    // loop's copies), 8 rows a warp; the loop runs over whole warps so that every lane reaches the
    // shuffles, and a lane past the last row loads nothing.
    const auto k = l2norm();
    const std::string src = source(k, {fake({1 << 16, 64})}, ReduceCall{1});
    EXPECT_TRUE(has(src, "const int _kiln_lane = threadIdx.x & 3;")) << src;
    EXPECT_TRUE(has(src, "const kiln_index_t _i = _kiln_w + ((threadIdx.x & 31) >> 2);")) << src;
    EXPECT_TRUE(has(src, "for (; _kiln_jv + 3 * (4) < _kiln_p._kiln_n_red / 4;")) << src;
    EXPECT_TRUE(has(src, "kiln::warp_reduce<4>(_kiln_acc);")) << src;
    EXPECT_TRUE(has(src, "if (_kiln_lane == 0 && _kiln_row) kiln_post_map(")) << src;
    compiles(k, {fake({1 << 16, 64})}, ReduceCall{1});
    // Rows of 16 floats: two lanes (a 32-byte sector), two loads each.
    const std::string sixteen = source(k, {fake({1 << 16, 16})}, ReduceCall{1});
    EXPECT_TRUE(has(sixteen, "kiln::warp_reduce<2>(_kiln_acc);")) << sixteen;
    EXPECT_TRUE(has(sixteen, "for (; _kiln_jv + 1 * (2) < _kiln_p._kiln_n_red / 4;")) << sixteen;
    compiles(k, {fake({1 << 16, 16})}, ReduceCall{1});
    // 17 vectors take 8 lanes (two loads at once, a third alone); 3 floats (no vector loads) four
    // lanes, a lane each; a single element one.
    const std::string seventeen = source(k, {fake({1 << 16, 68})}, ReduceCall{1});
    EXPECT_TRUE(has(seventeen, "kiln::warp_reduce<8>(_kiln_acc)")) << seventeen;
    compiles(k, {fake({1 << 16, 68})}, ReduceCall{1});
    EXPECT_TRUE(
        has(source(k, {fake({5001, 3})}, ReduceCall{1}), "kiln::warp_reduce<4>(_kiln_acc)"));
    const std::string single = source(k, {fake({5001, 1, 7})}, ReduceCall{1});
    EXPECT_TRUE(has(single, "kiln::warp_reduce<1>(_kiln_acc)")) << single;
    compiles(k, {fake({5001, 1, 7})}, ReduceCall{1});
}

TEST(ReductionCodegen, TheMapIsPassedIndicesOnlyWhereItNamesThem) {
    // l2norm's map sees its element alone: each call passes no indices for NVRTC to drop again.
    const std::string plain = source(l2norm(), {fake({1024, 1024})}, ReduceCall{1});
    EXPECT_TRUE(has(plain, "kiln_map(const float x) {")) << plain;
    EXPECT_TRUE(has(plain, ".add(kiln_map(_v0_x.v[0]));")) << plain;
    compiles(l2norm(), {fake({1024, 1024})}, ReduceCall{1});
    // A map that names _J, _j, _i or an index object, itself or through a preamble macro, gets
    // them all; a name that only contains one (_jump) does not count.
    const auto with = [](const char* map, const char* preamble = "") {
        kiln::ReductionOptions options;
        options.preamble = preamble;
        const ReductionKernel k("T x, T w", "T y", map, "a + b", "y = a", "0", "indexed", options);
        return source(k, {fake({1024, 1024}), 2.0f}, ReduceCall{1});
    };
    const std::string full = "kiln_index_t _J, kiln_index_t _j, kiln_index_t _i, "
                             "const kiln::Indexer<kiln_index_t>& _in_ind, "
                             "const kiln::Indexer<kiln_index_t>& _out_ind, const float w) {";
    for (const char* map : {"x * _J", "x * _j", "x + _i", "x * _in_ind.size()", "_out_ind.size()"})
        EXPECT_TRUE(has(with(map), full)) << map;
    EXPECT_TRUE(has(with("x * SCALE", "#define SCALE (w * _j)"), full));
    const std::string scalar_only = with("x * w + _jump", "__device__ const float _jump = 1;");
    EXPECT_TRUE(has(scalar_only, "kiln_map(const float x, const float w) {")) << scalar_only;
    EXPECT_TRUE(has(scalar_only, ".add(kiln_map(_v0_x.v[0], w));")) << scalar_only;
    const ReductionKernel k("T x, T w", "T y", "x * _j * w", "a + b", "y = a", "0", "indexed");
    compiles(k, {fake({1024, 1024}), 2.0f}, ReduceCall{1});
}

TEST(ReductionCodegen, CodeThatUsesNoDeviceSupportIncludesOnlyTheVectorAndBlockReduction) {
    // Each header costs NVRTC compile time in every kernel: l2norm includes the two helpers its
    // generated code calls, and its post-map gets no indices or index objects.
    const std::string plain = source(l2norm(), {fake({1024, 1024})}, ReduceCall{1});
    EXPECT_TRUE(has(plain, "#include \"kiln/vec.cuh\"\n#include \"kiln/block_reduce.cuh\"\n"))
        << plain;
    EXPECT_FALSE(has(plain, "kiln/elementwise.cuh")) << plain;
    EXPECT_FALSE(has(plain, "kiln/reduction.cuh")) << plain;
    EXPECT_FALSE(has(plain, "_in_ind")) << plain;
    EXPECT_TRUE(has(plain, "kiln_post_map(const _type_reduce& a, float& y) {")) << plain;
    EXPECT_TRUE(has(plain, "kiln_post_map(_kiln_acc.v, _kiln_p._raw_y[_o_y]);")) << plain;
    // A post-map that names the output's index or an index object gets them, and the headers.
    for (const char* post_map : {"y = a + _i", "y = a / _in_ind.size()", "y = _out_ind.size()"}) {
        const ReductionKernel k("T x", "T y", "x", "a + b", post_map, "0", "indexed");
        const std::string src = source(k, {fake({1024, 1024})}, ReduceCall{1});
        SCOPED_TRACE(post_map);
        EXPECT_TRUE(has(src, "#include \"kiln/elementwise.cuh\"\n#include "
                             "\"kiln/reduction.cuh\"\n"))
            << src;
        EXPECT_TRUE(has(src, "float& y, kiln_index_t _i, const kiln::Indexer<kiln_index_t>& "
                             "_in_ind, const kiln::Indexer<kiln_index_t>& _out_ind) {"))
            << src;
        compiles(k, {fake({1024, 1024})}, ReduceCall{1});
    }
    // Code that names kiln:: (the ready reductions' casts, pairs and merges) keeps the headers.
    const ReductionKernel argmax(
        "T x", "int64 y", "kiln::make_pair(x, _J)", "kiln::argmax_merge(a, b)", "y = a.second",
        "_type_reduce(kiln::lowest<T>(), -1)", "my_argmax", {"kiln::pair<T, long long>"});
    const std::string with = source(argmax, {fake({512, 512})}, ReduceCall{1});
    EXPECT_TRUE(has(with, "kiln/reduction.cuh")) << with;
}

TEST(ReductionCodegen, OuterAxesGetAThreadPerColumnWithRowsSplitAcrossBlocks) {
    const auto k = l2norm();
    Array x = fake({4096, 4096});
    const std::string src = source(k, {x}, ReduceCall{0});
    EXPECT_TRUE(has(src, "_kiln_acc[4]")) << "4 neighbouring columns per thread: " << src;
    EXPECT_TRUE(has(src, "__launch_bounds__(256)"));
    EXPECT_TRUE(has(src, "_kiln_j0 + threadIdx.y"));
    compiles(k, {x}, ReduceCall{0});
    // Batched: the middle axis of a 3-D array.
    Array y = fake({64, 128, 256});
    EXPECT_TRUE(has(source(k, {y}, ReduceCall{1}), "_kiln_j0 + threadIdx.y"));
    compiles(k, {y}, ReduceCall{1});
}

TEST(ReductionCodegen, ColumnsOfFewRowsGetAThreadPerColumnThatReadsEveryRow) {
    // Axis 0 of (4, N): one row of 256 threads a block over neighbouring columns, each thread
    // with its four rows' loads in flight at once (the unrolled loop's four copies, entered once),
    // nothing merged through shared memory, never split.
    const auto k = l2norm();
    const Array four = fake({4, 1 << 20});
    const std::string src = source(k, {four}, ReduceCall{0});
    EXPECT_TRUE(has(src, "__launch_bounds__(256)")) << src;
    EXPECT_TRUE(has(src, "((kiln_index_t)blockIdx.x * 256 + threadIdx.x) * 4;")) << src;
    EXPECT_TRUE(has(src, "for (; _kiln_jv + 3 * (1) < _kiln_j1;")) << src;
    EXPECT_TRUE(has(src, "const kiln::Vec<float, 4> _v3_x")) << src;
    EXPECT_FALSE(has(src, "_kiln_scratch[")) << src;
    EXPECT_FALSE(has(src, "__syncthreads")) << src;
    EXPECT_FALSE(has(src, "atomicAdd")) << src;
    compiles(k, {four}, ReduceCall{0});
    // Up to 8 loads in flight: 16 rows take the unrolled loop twice; 2 rows are 2 copies.
    const std::string sixteen = source(k, {fake({16, 1 << 20})}, ReduceCall{0});
    EXPECT_TRUE(has(sixteen, "for (; _kiln_jv + 7 * (1) < _kiln_j1;")) << sixteen;
    compiles(k, {fake({16, 1 << 20})}, ReduceCall{0});
    EXPECT_TRUE(has(source(k, {fake({2, 1 << 20})}, ReduceCall{0}), "_kiln_jv + 1 * (1)"));
    EXPECT_TRUE(has(source(k, {fake({24, 1000})}, ReduceCall{0}), "_kiln_jv + 7 * (1)"));
    // Narrow columns get a narrower block: 16 floats are 4 vectors, a warp.
    const std::string narrow = source(k, {fake({4096, 16, 16})}, ReduceCall{1});
    EXPECT_TRUE(has(narrow, "__launch_bounds__(32)")) << narrow;
    compiles(k, {fake({4096, 16, 16})}, ReduceCall{1});
    // Kernels that see indices, of float64 (two a vector) and of pairs.
    const ReductionKernel weighted("T x", "T y, int64 at", "x * (1 + _J % 5)", "a + b",
                                   "y = a; at = _i", "0", "weighted_sum");
    compiles(weighted, {fake({5, 1000}, DType::float64)}, ReduceCall{0});
    compiles(weighted, {fake({7, 4, 36}, DType::float64)}, ReduceCall{1});
    const ReductionKernel argmax(
        "T x", "int64 y", "kiln::make_pair(x, _J)", "kiln::argmax_merge(a, b)", "y = a.second",
        "_type_reduce(kiln::lowest<T>(), -1)", "pair_argmax", {"kiln::pair<T, long long>"});
    compiles(argmax, {fake({16, 1000})}, ReduceCall{0});
    // From 32 rows on, 8 rows of threads a block share the rows again.
    const std::string many = source(k, {fake({32, 1 << 20})}, ReduceCall{0});
    EXPECT_TRUE(has(many, "_kiln_j0 + threadIdx.y")) << many;
    EXPECT_TRUE(has(many, "_kiln_scratch[")) << many;
}

TEST(ReductionCodegen, ColumnsTooShortToSplitGetAKernelWithoutTheSplitPath) {
    // A split needs each thread of the 8 rows of a block to read 16 rows at least twice over:
    // 256 rows can split, 255 cannot, on any device. The short kernel keeps its loops rolled.
    const auto k = l2norm();
    const Array short_columns = fake({255, 4096});
    const std::string src = source(k, {short_columns}, ReduceCall{0});
    EXPECT_FALSE(has(src, "_kiln_S")) << src;
    EXPECT_FALSE(has(src, "atomicAdd")) << src;
    EXPECT_FALSE(has(src, "_kiln_last")) << src;
    EXPECT_TRUE(has(src, "const kiln_index_t _kiln_j0 = 0, _kiln_j1 = _kiln_p._kiln_n_red;"))
        << src;
    EXPECT_TRUE(has(src, "#pragma unroll 1\n            for (; _kiln_jv + 3 * (8)")) << src;
    compiles(k, {short_columns}, ReduceCall{0});
    const std::string split_src = source(k, {fake({256, 4096})}, ReduceCall{0});
    EXPECT_TRUE(has(split_src, "atomicAdd(_kiln_p._kiln_counters")) << split_src;
    // The split kernel's row loop is rolled too: its step is the constant 8.
    EXPECT_TRUE(has(split_src, "#pragma unroll 1\n            for (; _kiln_jv + 3 * (8)"))
        << split_src;
}

TEST(ReductionCodegen, MixedAxesUnravelTheReductionIndexAndKeepVectors) {
    const auto k = l2norm();
    Array x = fake({32, 64, 256});
    const std::string src = source(k, {x}, ReduceCall{{0, 2}});
    EXPECT_TRUE(has(src, "_kiln_p._kiln_rshape[1]")) << src;
    EXPECT_TRUE(has(src, "kiln::Vec<float, 4>")) << src;
    compiles(k, {x}, ReduceCall{{0, 2}});
}

TEST(ReductionCodegen, TheSourceDoesNotDependOnTheDevicesMultiprocessorCount) {
    // A kernel warmed offline (no device) must be the one a call on any GPU asks for: 114 is an
    // H100 PCIe, 132 an H100 SXM. Rows of 64 with 2000 outputs and rows of 4096 with 500 outputs
    // sit between the thresholds a layout choice would take from either count.
    const auto k = l2norm();
    for (const kiln::Dims& shape : {kiln::Dims{2000, 64}, kiln::Dims{500, 4096}}) {
        SCOPED_TRACE(shape.to_string());
        Array x = fake(shape);
        const kiln::Arg args[] = {x};
        const std::string offline = k.source_for(args, 1, ReduceCall{1});
        for (int multiprocessors : {8, 46, 80, 108, 114, 132, 148, 170}) {
            SCOPED_TRACE(multiprocessors);
            kiln::detail::set_planning_multiprocessors_for_testing(multiprocessors);
            EXPECT_EQ(k.source_for(args, 1, ReduceCall{1}), offline);
        }
        kiln::detail::set_planning_multiprocessors_for_testing(0);
    }
}

TEST(ReductionCodegen, ContiguousAxesCollapseIntoOne) {
    const auto k = l2norm();
    Array x = fake({8, 16, 32, 64});
    const std::string src = source(k, {x}, ReduceCall{{2, 3}});
    EXPECT_TRUE(has(src, "_kiln_kshape[1]")) << src;
    EXPECT_TRUE(has(src, "_kiln_rshape[1]")) << "axes 2 and 3 merge into one reduced axis: " << src;
    EXPECT_FALSE(has(src, "_kiln_rshape[2]"));
}

TEST(ReductionCodegen, StridedInputsReadElementByElementAndTransposesReadAsColumns) {
    const auto k = l2norm();
    // Every third column: no vector loads along the reduced axis.
    Array sliced = fake({1000, 1000}).slice({kiln::Slice::all(), kiln::Slice::range(0, 1000, 3)});
    const std::string strided = source(k, {sliced}, ReduceCall{1});
    EXPECT_FALSE(has(strided, "kiln::Vec")) << strided;
    compiles(k, {sliced}, ReduceCall{1});
    compiles(k, {sliced});
    // A transposed array reduced along its strided axis is a column reduction of the original.
    Array transposed = fake({256, 512}).transpose(); // (512, 256), element strides (1, 512)
    const std::string columns = source(k, {transposed}, ReduceCall{1});
    EXPECT_TRUE(has(columns, "_kiln_j0 + threadIdx.y")) << columns;
    compiles(k, {transposed}, ReduceCall{1});
}

TEST(ReductionCodegen, EveryDTypeCompilesForSumLikeKernels) {
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum_like");
    for (int d = 0; d < kiln::kDTypeCount; ++d) {
        const auto dtype = static_cast<DType>(d);
        SCOPED_TRACE(kiln::name(dtype));
        Array x = fake({64, 300}, dtype);
        compiles(sum, {x}, ReduceCall{1});
        compiles(sum, {x}, ReduceCall{0});
        compiles(sum, {x});
    }
}

TEST(ReductionCodegen, KernelsWithoutIdentityTrackWhetherAValueIsHeld) {
    const ReductionKernel k("T x", "T y", "x", "max(a, b)", "y = a", "", "max_no_identity");
    Array x = fake({128, 128});
    const std::string src = source(k, {x}, ReduceCall{1});
    EXPECT_TRUE(has(src, "bool has;")) << src;
    EXPECT_FALSE(has(src, "kiln_identity"));
    compiles(k, {x}, ReduceCall{1});
    compiles(k, {x}, ReduceCall{0});
}

TEST(ReductionCodegen, PairReduceTypesServeArgmax) {
    const ReductionKernel argmax(
        "T x", "int64 y", "kiln::make_pair(x, _J)", "kiln::argmax_merge(a, b)", "y = a.second",
        "_type_reduce(kiln::lowest<T>(), -1)", "my_argmax", {"kiln::pair<T, long long>"});
    Array x = fake({1 << 20});
    compiles(argmax, {x});
    Array m = fake({512, 512});
    compiles(argmax, {m}, ReduceCall{0});
    compiles(argmax, {m}, ReduceCall{1});
}

TEST(ReductionCodegen, SeveralInputsBroadcastAndScalarsReachEveryExpression) {
    const ReductionKernel k("T x, T w, float32 scale", "T y, T z", "x * w * scale", "a + b",
                            "y = a; z = a * scale", "0", "weighted");
    Array x = fake({256, 1024}), w = fake({1024});
    const std::string src = source(k, {x, w, 2.0f}, ReduceCall{1});
    EXPECT_TRUE(has(src, "const float scale")) << src;
    compiles(k, {x, w, 2.0f}, ReduceCall{1});
    compiles(k, {x, w, 2.0f}, ReduceCall{0});
}

TEST(ReductionCodegen, KeepdimsAndGivenOutputsShapeTheResult) {
    const auto k = l2norm();
    Array x = fake({4, 5, 6});
    Array given = fake({4, 1, 6});
    compiles(k, {x, given}, ReduceCall{1, true});
    EXPECT_TRUE(has(error_of<kiln::ShapeError>([&] {
                        source(k, {x, given}, ReduceCall{1});
                    }),
                    "(4, 6)"));
}

TEST(ReductionCodegen, AxesOutOfRangeOrRepeatedAreAxisErrors) {
    const auto k = l2norm();
    Array x = fake({4, 5, 6});
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] { source(k, {x}, ReduceCall{3}); }),
                    "axis 3 is out of bounds for an array of dimension 3"));
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] { source(k, {x}, ReduceCall{-4}); }), "axis -4"));
    EXPECT_TRUE(has(error_of<kiln::AxisError>([&] {
                        source(k, {x}, ReduceCall{{0, -3}});
                    }),
                    "repeated"));
    EXPECT_NO_THROW(source(k, {x}, ReduceCall{{-1, 0}}));
}

TEST(ReductionCodegen, AnEmptyReductionWithoutIdentityIsAnError) {
    const ReductionKernel k("T x", "T y", "x", "max(a, b)", "y = a", "", "maxk");
    Array x = fake({0, 5});
    EXPECT_TRUE(
        has(error_of<kiln::ArgumentError>([&] { source(k, {x}, ReduceCall{0}); }), "no identity"));
    // Reducing the non-empty axis of an empty array has no outputs: fine.
    EXPECT_NO_THROW(source(k, {x}, ReduceCall{1}));
    // With an identity the empty reduction gives the identity.
    EXPECT_NO_THROW(source(l2norm(), {x}, ReduceCall{0}));
}

TEST(ReductionCodegen, BadSpecsAreSpecErrors) {
    auto make = [](const char* in, const char* out, const char* map = "x") {
        return [=] { ReductionKernel(in, out, map, "a + b", "y = a", "0", "k"); };
    };
    EXPECT_TRUE(has(error_of<kiln::SpecError>(make("raw T x", "T y")), "raw"));
    EXPECT_TRUE(has(error_of<kiln::SpecError>(make("T x", "T a")), "'a'"));
    EXPECT_TRUE(has(error_of<kiln::SpecError>(make("T x", "T y", "  ")), "map expression"));
    EXPECT_TRUE(has(error_of<kiln::SpecError>(make("T x,", "T y")), "^"));
    EXPECT_TRUE(has(error_of<kiln::SpecError>(make("", "T y")), "input"));
}

TEST(ReductionCodegen, MoreOutputsThanACallReturnsAreRefusedWhenTheKernelIsMade) {
    // Outputs holds at most Outputs::kCapacity arrays: a kernel with more must not be made (it
    // used to launch, then throw while collecting its outputs).
    std::string outs, post;
    for (std::size_t k = 0; k <= kiln::Outputs::kCapacity; ++k) {
        outs += (k ? ", T y" : "T y") + std::to_string(k);
        post += "y" + std::to_string(k) + " = a; ";
    }
    const std::string message = error_of<kiln::SpecError>(
        [&] { ReductionKernel("T x", outs, "x", "a + b", post, "0", "many_outputs"); });
    EXPECT_TRUE(has(message, "at most 8 output")) << message;
    EXPECT_TRUE(has(message, "many_outputs")) << message;
}

TEST(ReductionCodegen, AnOutputThatIsABroadcastViewIsRefused) {
    // Its elements overlap: several outputs would be written to one place, by racing threads.
    Array y = fake({1}).broadcast_to({4});
    const std::string message = error_of<kiln::ArgumentError>([&] {
        source(l2norm(), {fake({4, 8}), y}, ReduceCall{1});
    });
    EXPECT_TRUE(has(message, "output 'y' is a broadcast view")) << message;
}

TEST(ReductionCodegen, APreambleMayIncludeTheToolkitsHeadersWhateverTheDtypes) {
    // The toolkit's headers are always on the include path: only an #include costs compile time.
    kiln::ReductionOptions groups;
    groups.preamble = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;";
    const ReductionKernel k("float32 x", "float32 y", "x * cg::this_thread_block().size()", "a + b",
                            "y = a", "0", "with_groups", groups);
    compiles(k, {fake({1000})});
}

TEST(ReductionCodegen, CompileErrorsNameTheExpressionAtFault) {
    Array x = fake({1000});
    auto error = [&](const char* map, const char* reduce, const char* post, const char* identity) {
        const ReductionKernel k("T x", "T y", map, reduce, post, identity, "faulty");
        try {
            k.compile_for(nullptr, 0, {}, "sm_90");
        } catch (const kiln::ArgumentError&) {
        }
        const std::initializer_list<kiln::Arg> args{x};
        try {
            k.compile_for(args.begin(), args.size(), {}, "sm_90");
        } catch (const kiln::CompileError& e) {
            EXPECT_TRUE(has(e.what(), "faulty")) << e.what();
            EXPECT_TRUE(has(e.source(), "kiln_reduce")) << "the generated source is attached";
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_TRUE(has(error("x", "a +* b", "y = a", "0"), "the reduce expression 'a +* b'"));
    EXPECT_TRUE(has(error("x", "a + b", "y = a", "1.0.0"),
                    "the identity '1.0.0' is at fault (it must convert to the reduce type float)"));
    EXPECT_TRUE(has(error("x +", "a + b", "y = a", "0"), "the map expression"));
    EXPECT_TRUE(has(error("x", "a + b", "y = nosuch(a)", "0"), "the post-map expression"));
}

TEST(ReductionCodegen, AxesPrintAsNumPyWritesThem) {
    EXPECT_EQ(Axes().to_string(), "None");
    EXPECT_EQ(Axes(1).to_string(), "1");
    EXPECT_EQ(Axes({0, 2}).to_string(), "(0, 2)");
    EXPECT_EQ(Axes::none().to_string(), "()");
}

TEST(ReductionCodegen, ComplexExtremesCompileFromTheSharedRecipes) {
    // max, min, argmax and argmin of complex values: (value, index) pairs in NumPy's order, so a
    // NaN or a tie gives NumPy's element. Built as the ready reductions build them.
    using kiln::detail::ReduceOp;
    const std::pair<ReduceOp, DType> cases[] = {{ReduceOp::max, DType::complex64},
                                                {ReduceOp::min, DType::complex128},
                                                {ReduceOp::argmax, DType::complex128},
                                                {ReduceOp::argmin, DType::complex64}};
    for (const auto& [op, dtype] : cases) {
        SCOPED_TRACE(std::string(kiln::detail::reduce_op_name(op)) + " of " + kiln::name(dtype));
        const auto recipe = kiln::detail::reduction_recipe(op, dtype, std::nullopt, Axes(0));
        const bool value = op == ReduceOp::max || op == ReduceOp::min;
        EXPECT_EQ(recipe.result, value ? dtype : DType::int64);
        EXPECT_TRUE(recipe.empty_is_error);
        EXPECT_TRUE(has(recipe.reduce, "_merge(a, b)")) << recipe.reduce;
        const ReductionKernel k = kiln::detail::recipe_kernel(recipe, "complex_extreme");
        compiles(k, {fake({1 << 20}, dtype)});                 // one output split by blocks
        compiles(k, {fake({512, 700}, dtype)}, ReduceCall{0}); // columns
    }
}

TEST(ReductionCodegen, ReadyReductionsCompileOnEveryLayoutOfTheLayoutsBench) {
    // bench_layouts' reductions, built as the ready reductions build them: short rows (lanes
    // sharing a warp, several loads a lane), axis 0 of few rows (a thread reads a column's every
    // row), batched columns and mixed axes.
    using kiln::detail::ReduceOp;
    struct Case {
        kiln::Dims shape;
        Axes axes;
    };
    const Case cases[] = {{{1 << 16, 16}, Axes(1)},     {{1 << 16, 64}, Axes(1)},
                          {{2, 1 << 20}, Axes(0)},      {{16, 1 << 20}, Axes(0)},
                          {{64, 1 << 20}, Axes(0)},     {{256, 64, 1024}, Axes(1)},
                          {{1 << 12, 16, 16}, Axes(1)}, {{256, 64, 1024}, Axes{0, 2}}};
    for (const Case& c : cases)
        compiles(l2norm(), {fake(c.shape)}, ReduceCall{c.axes});
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::argmax, ReduceOp::argmin}) {
        for (const Case& c : cases) {
            if ((op == ReduceOp::argmax || op == ReduceOp::argmin) && c.axes.size() != 1) continue;
            SCOPED_TRACE(std::string(kiln::detail::reduce_op_name(op)) + " over " +
                         c.shape.to_string() + ", axis=" + c.axes.to_string());
            const auto recipe =
                kiln::detail::reduction_recipe(op, DType::float32, std::nullopt, c.axes);
            const ReductionKernel k = kiln::detail::recipe_kernel(recipe, "ready_on_layout");
            compiles(k, {fake(c.shape)}, ReduceCall{c.axes});
        }
    }
}

TEST(ReductionCodegen, ComplexOrderHelpersServeUserKernelsOverAnyDtype) {
    // The same expressions over complex and real values.
    const ReductionKernel largest("T x", "T y", "x", "kiln::maximum(a, b)", "y = a", "",
                                  "any_maximum");
    const ReductionKernel counted("T x, T t", "int64 n",
                                  "(kiln::greater(x, t) || kiln::less_equal(x, -t) || "
                                  "kiln::has_nan(x)) ? 1 : 0",
                                  "a + b", "n = a", "0", "any_order");
    kiln::ReductionOptions pairs;
    pairs.reduce_type = "kiln::pair<T, long long>";
    const ReductionKernel first_min("T x", "int64 y", "kiln::make_pair(x, _J)",
                                    "kiln::argmin_merge(a, b)", "y = a.second",
                                    "_type_reduce(T(), -1)", "any_argmin", pairs);
    for (DType dtype : {DType::complex64, DType::float32}) {
        SCOPED_TRACE(kiln::name(dtype));
        compiles(largest, {fake({256, 300}, dtype)}, ReduceCall{1});
        compiles(first_min, {fake({256, 300}, dtype)}, ReduceCall{0});
        const kiln::Scalar t = dtype == DType::complex64
                                   ? kiln::Scalar(std::complex<float>(0.5f, 0.0f))
                                   : kiln::Scalar(0.5f);
        compiles(counted, {fake({256, 300}, dtype), t}, ReduceCall{0});
    }
}

TEST(ReductionCodegen, ACompileErrorsFirstLineIsNvrtcsFirstErrorWithItsLine) {
    const ReductionKernel k("T x", "T y", "x", "a + nosuch", "y = a", "0", "first_line");
    const Array x = fake({1000});
    const std::initializer_list<kiln::Arg> args{x};
    try {
        k.compile_for(args.begin(), args.size(), {}, "sm_90");
        FAIL() << "compiled";
    } catch (const kiln::CompileError& e) {
        const std::string what = e.what();
        const std::string first = what.substr(0, what.find('\n'));
        EXPECT_TRUE(has(first, "ReductionKernel 'first_line' does not compile: the reduce "
                               "expression 'a + nosuch' is at fault: "))
            << first;
        EXPECT_TRUE(has(first, "): error: identifier \"nosuch\" is undefined")) << first;
        EXPECT_EQ(first.substr(first.size() - e.first_error().size()), e.first_error());
        // The line NVRTC names is the reduce expression's line of the generated source.
        const std::size_t close = first.rfind("): error");
        const int line = std::atoi(first.c_str() + first.rfind('(', close) + 1);
        const std::string numbered = e.numbered_source();
        const std::string marker = std::to_string(line) + " | ";
        const std::size_t at = numbered.find(marker);
        ASSERT_NE(at, std::string::npos) << numbered;
        EXPECT_TRUE(has(numbered.substr(at, numbered.find('\n', at) - at), "a + nosuch"))
            << "line " << line << " of\n"
            << numbered;
        EXPECT_TRUE(has(what, "--- NVRTC log ---")) << "the log, options and source follow";
    }
}
