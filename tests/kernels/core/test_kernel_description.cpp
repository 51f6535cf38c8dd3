// What ElementwiseKernel and ReductionKernel record about a call (describe_for, the description
// a cache entry's recipe holds): the spec, every argument given and the call's settings, with
// nothing else; no device needed. That the description replays to the same kernel is
// tests/tools/test_warm_front_ends.cpp's part.

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>

using kiln::Array;
using kiln::DType;
using kiln::ElementwiseKernel;
using kiln::ReduceCall;
using kiln::ReductionKernel;
using nlohmann::json;

namespace {

constexpr CUdeviceptr kBase = CUdeviceptr{1} << 32;

Array fake(const kiln::Dims& shape, DType dtype = DType::float32, CUdeviceptr offset = 0) {
    return Array::wrap(kBase + offset, shape, dtype);
}

json described(const ElementwiseKernel& k, std::initializer_list<kiln::Arg> args,
               const kiln::CallOptions& options = {}) {
    return json::parse(k.describe_for(args.begin(), args.size(), options));
}

json described(const ReductionKernel& k, std::initializer_list<kiln::Arg> args,
               const ReduceCall& how = {}) {
    return json::parse(k.describe_for(args.begin(), args.size(), how));
}

} // namespace

TEST(KernelDescription, AnElementwiseCallRecordsItsSpecAndEachArgument) {
    const ElementwiseKernel scale("T x, T a", "T y", "y = x * a", "scale");
    Array x = fake({1024});
    Array y = fake({1024});
    const json expected = json::parse(R"j({
        "elementwise": {"name": "scale", "in_params": "T x, T a", "out_params": "T y",
                        "operation": "y = x * a"},
        "args": [{"dtype": "float32", "shape": [1024]}, {"dtype": "float32", "scalar": true},
                 {"dtype": "float32", "shape": [1024]}]})j");
    EXPECT_EQ(described(scale, {x, 2.0f, y}), expected);
    // Outputs not given are not arguments; a scalar keeps its own dtype.
    const json allocated = described(scale, {x, 2.0});
    ASSERT_EQ(allocated["args"].size(), 2u) << allocated;
    EXPECT_EQ(allocated["args"][1], json::parse(R"j({"dtype": "float64", "scalar": true})j"));
}

TEST(KernelDescription, ElementwiseCodeOptionsSwitchesAndCallSettingsAreRecorded) {
    kiln::ElementwiseOptions options;
    options.preamble = "__device__ int twice(int v) { return 2 * v; }";
    options.loop_prep = "int base = 1;";
    options.after_loop = ";";
    options.options = {"-DN=4", "--use_fast_math"};
    options.no_return = true;
    options.reduce_dims = false;
    const ElementwiseKernel k("raw T x", "raw T y", "y[i] = x[i] + base + twice(N)", "gather",
                              options);
    Array x = fake({64}, DType::int32);
    Array y = fake({64}, DType::int32);
    kiln::CallOptions call;
    call.size = 64;
    call.block_size = 128;
    const json d = described(k, {x, y}, call);
    EXPECT_EQ(d["elementwise"], json::parse(R"j({
        "name": "gather", "in_params": "raw T x", "out_params": "raw T y",
        "operation": "y[i] = x[i] + base + twice(N)",
        "preamble": "__device__ int twice(int v) { return 2 * v; }", "loop_prep": "int base = 1;",
        "after_loop": ";", "options": ["-DN=4", "--use_fast_math"], "no_return": true,
        "reduce_dims": false
})j")) << d;
    EXPECT_EQ(d["size"], 64);
    EXPECT_EQ(d["block_size"], 128);
    // The front end comes first: a reader sees what kind of kernel it is before its arguments.
    const std::string text = k.describe_for(std::array<kiln::Arg, 2>{x, y}.data(), 2, call);
    EXPECT_EQ(nlohmann::ordered_json::parse(text).begin().key(), "elementwise") << text;
}

TEST(KernelDescription, StridesAndMisalignmentAreRecordedWhenTheyAreNotTheDefault) {
    const ElementwiseKernel copy("T x", "T y", "y = x", "copy");
    // Every other column of a (64, 256) float32 array, starting 4 bytes past a 16-byte boundary.
    Array strided = Array::wrap(kBase + 4, {64, 128}, DType::float32, {1024, 8});
    const json d = described(copy, {strided});
    EXPECT_EQ(d["args"][0], json::parse(R"j({"dtype": "float32", "shape": [64, 128],
                                             "strides": [256, 2], "offset": 4})j"))
        << d;
    // A transpose is strided but aligned; extent-1 axes do not make an array strided.
    const json t = described(copy, {fake({32, 16}).transpose()});
    EXPECT_EQ(t["args"][0], json::parse(R"j({"dtype": "float32", "shape": [16, 32],
                                             "strides": [1, 16]})j"));
    const json one = described(copy, {Array::wrap(kBase, {1, 8}, DType::float32, {4, 4})});
    EXPECT_FALSE(one["args"][0].contains("strides")) << one;
}

TEST(KernelDescription, AReductionCallRecordsItsSpecAxesAndKeepdims) {
    kiln::ReductionOptions options;
    options.reduce_type = "float64";
    options.preamble = "#define SQ(v) ((v) * (v))";
    options.options = {"-DUNUSED"};
    options.reduce_dims = false;
    options.empty_is_error = true;
    const ReductionKernel k("T x", "T y", "SQ(x)", "a + b", "y = sqrt(a)", "0", "l2norm", options);
    Array x = fake({8, 16, 32});
    const json d = described(k, {x}, ReduceCall{{0, -1}, /*keepdims=*/true});
    EXPECT_EQ(d, json::parse(R"j({
        "reduction": {"name": "l2norm", "in_params": "T x", "out_params": "T y",
                      "map_expr": "SQ(x)", "reduce_expr": "a + b", "post_map_expr": "y = sqrt(a)",
                      "identity": "0", "reduce_type": "float64",
                      "preamble": "#define SQ(v) ((v) * (v))", "options": ["-DUNUSED"],
                      "reduce_dims": false, "empty_is_error": true
}
, "args" : [ {"dtype" : "float32", "shape" : [ 8, 16, 32 ]} ], "axis" : [ 0, -1 ], "keepdims" : true
})j")) << d;
}

TEST(KernelDescription, EveryAxisIsNoAxisFieldAndNoAxisIsAnEmptyList) {
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "", "sum_like");
    Array x = fake({8, 16});
    const json all = described(sum, {x});
    EXPECT_FALSE(all.contains("axis")) << all;
    EXPECT_FALSE(all["reduction"].contains("identity")) << "no identity: " << all;
    EXPECT_EQ(described(sum, {x}, ReduceCall{kiln::Axes::none()})["axis"], json::array());
    EXPECT_EQ(described(sum, {x}, ReduceCall{1})["axis"], json::array({1}));
}

TEST(KernelDescription, ACallTheFrontEndRefusesIsNotDescribed) {
    const ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "sum_like");
    Array x = fake({8, 16});
    const kiln::Arg args[] = {x};
    EXPECT_THROW(sum.describe_for(args, 1, ReduceCall{2}), kiln::AxisError);
    const ElementwiseKernel add("T x, T y", "T z", "z = x + y", "add");
    EXPECT_THROW(add.describe_for(args, 1), kiln::ArgumentError);
}
