// Array views on the CPU: Array::wrap over a fake device address (or host memory, to read the
// elements a view selects), shapes, byte strides, data() offsets, slicing with Python's rules,
// transposes, reshapes, broadcasting, and the errors. No GPU needed.

#include "array/internal_kernels.hpp"
#include "kiln/array.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace {

using kiln::Array;
using kiln::Dims;
using kiln::DType;
using kiln::Index;
using kiln::Slice;

constexpr CUdeviceptr kBase = 0x10000;

Array fake(Dims shape, DType dtype = DType::float32) {
    return Array::wrap(kBase, shape, dtype);
}

// An int32 array over host memory holding 0, 1, 2, ... so a view's elements can be read back.
struct HostArray {
    std::vector<std::int32_t> values;
    Array array;
    explicit HostArray(Dims shape)
        : values(static_cast<std::size_t>(shape.product())) {
        std::iota(values.begin(), values.end(), 0);
        array = Array::wrap(reinterpret_cast<CUdeviceptr>(values.data()), shape, DType::int32);
    }
};

// The elements of @p view in C order, read through its data() and byte strides.
std::vector<std::int32_t> elements(const Array& view) {
    std::vector<std::int32_t> out;
    if (view.size() == 0) return out;
    std::vector<std::int64_t> index(static_cast<std::size_t>(view.ndim()), 0);
    for (std::int64_t n = 0; n < view.size(); ++n) {
        std::int64_t offset = 0;
        for (int d = 0; d < view.ndim(); ++d)
            offset += index[static_cast<std::size_t>(d)] * view.strides()[d];
        // NOLINTNEXTLINE(performance-no-int-to-ptr): host memory wrapped as an Array by this test
        out.push_back(*reinterpret_cast<const std::int32_t*>(view.data() + offset));
        for (int d = view.ndim() - 1; d >= 0; --d) {
            if (++index[static_cast<std::size_t>(d)] < view.shape()[d]) break;
            index[static_cast<std::size_t>(d)] = 0;
        }
    }
    return out;
}

template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

TEST(Dims, PrintsLikeNumPyTuples) {
    EXPECT_EQ(Dims({2, 3}).to_string(), "(2, 3)");
    EXPECT_EQ(Dims({4}).to_string(), "(4,)");
    EXPECT_EQ(Dims().to_string(), "()");
}

TEST(Dims, ProductEqualityAndLimits) {
    EXPECT_EQ(Dims({2, 3, 4}).product(), 24);
    EXPECT_EQ(Dims().product(), 1);
    EXPECT_EQ(Dims({5, 0, 3}).product(), 0);
    EXPECT_EQ(Dims({1, 2}), Dims(std::vector<std::int64_t>{1, 2}));
    EXPECT_NE(Dims({1, 2}), Dims({1, 2, 1}));
    EXPECT_NE(Dims({1, 2}), Dims({2, 1}));
    Dims d;
    for (int i = 0; i < kiln::kMaxDims; ++i)
        d.push_back(1);
    EXPECT_THROW(d.push_back(1), kiln::ArgumentError);
    EXPECT_THROW(Dims(std::vector<std::int64_t>(17, 1)), kiln::ArgumentError);
    EXPECT_THROW(d.resize(17), kiln::ArgumentError);
    d.resize(2, 7);
    EXPECT_EQ(d, Dims({1, 1}));
    d.resize(4, 7);
    EXPECT_EQ(d, Dims({1, 1, 7, 7}));
}

TEST(Array, DefaultIsEmptyAndNull) {
    Array a;
    EXPECT_EQ(a.data(), 0u);
    EXPECT_EQ(a.ndim(), 0);
    EXPECT_EQ(a.owner(), nullptr);
}

TEST(Array, WrapComputesCStridesInBytes) {
    Array a = fake({2, 3, 4});
    EXPECT_EQ(a.strides(), Dims({48, 16, 4}));
    EXPECT_EQ(a.size(), 24);
    EXPECT_EQ(a.nbytes(), 96u);
    EXPECT_EQ(a.data(), kBase);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a made-up address, compared, never dereferenced
    EXPECT_EQ(a.data<float>(), reinterpret_cast<float*>(kBase));
    EXPECT_EQ(fake({5}, DType::int16).strides(), Dims({2}));
    EXPECT_EQ(fake({3, 2}, DType::complex128).strides(), Dims({32, 16}));
    EXPECT_EQ(fake({3}, DType::bool_).nbytes(), 3u);
}

TEST(Array, ZeroDimensionalArrayHasOneElement) {
    Array a = fake({}, DType::float64);
    EXPECT_EQ(a.ndim(), 0);
    EXPECT_EQ(a.size(), 1);
    EXPECT_EQ(a.nbytes(), 8u);
    EXPECT_TRUE(a.strides().empty());
    EXPECT_TRUE(a.is_c_contiguous());
    EXPECT_TRUE(a.is_f_contiguous());
}

TEST(Array, WrapKeepsGivenStridesAndOwner) {
    auto owner = std::make_shared<int>(42);
    Array a = Array::wrap(kBase, {3, 4}, DType::float32, {4, 12}, owner);
    EXPECT_EQ(a.strides(), Dims({4, 12}));
    EXPECT_EQ(owner.use_count(), 2);
    Array view = a.transpose();
    EXPECT_EQ(owner.use_count(), 3);
    a = Array();
    view = Array();
    EXPECT_EQ(owner.use_count(), 1);
}

TEST(Array, WrapRejectsBadShapesAndStrides) {
    EXPECT_THROW(fake({2, -1}), kiln::ArgumentError);
    EXPECT_THROW(Array::wrap(kBase, {2, 3}, DType::float32, {4}), kiln::ArgumentError);
}

TEST(Array, CStridesTreatZeroExtentsAsOne) {
    EXPECT_EQ(kiln::c_strides({2, 0, 3}, 8), Dims({24, 24, 8}));
    EXPECT_EQ(kiln::c_strides({}, 8), Dims());
    EXPECT_EQ(kiln::c_strides({7}, 2), Dims({2}));
}

TEST(Array, ContiguityFollowsNumPy) {
    Array c = fake({2, 3});
    EXPECT_TRUE(c.is_c_contiguous());
    EXPECT_FALSE(c.is_f_contiguous());
    Array f = c.transpose();
    EXPECT_FALSE(f.is_c_contiguous());
    EXPECT_TRUE(f.is_f_contiguous());
    // Size-1 dimensions never matter, whatever their stride.
    Array row = Array::wrap(kBase, {1, 5}, DType::float32, {12345, 4});
    EXPECT_TRUE(row.is_c_contiguous());
    EXPECT_TRUE(row.is_f_contiguous());
    Array strided_row = Array::wrap(kBase, {1, 5}, DType::float32, {12345, 8});
    EXPECT_FALSE(strided_row.is_c_contiguous());
    EXPECT_FALSE(strided_row.is_f_contiguous());
    Array column = fake({3, 1});
    EXPECT_TRUE(column.is_c_contiguous());
    EXPECT_TRUE(column.is_f_contiguous());
    // Zero-size arrays are contiguous both ways.
    Array none = Array::wrap(kBase, {3, 0, 2}, DType::float32, {7, 5, 3});
    EXPECT_TRUE(none.is_c_contiguous());
    EXPECT_TRUE(none.is_f_contiguous());
    // Steps and broadcasts break contiguity.
    EXPECT_FALSE(fake({10}).slice({Slice::range(0, 10, 2)}).is_c_contiguous());
    EXPECT_FALSE(fake({3}).broadcast_to({2, 3}).is_c_contiguous());
    EXPECT_FALSE(fake({4}).slice({Slice{std::nullopt, std::nullopt, -1}}).is_c_contiguous());
}

TEST(Array, ReshapeViewsContiguousArrays) {
    Array a = fake({2, 3, 4});
    Array r = a.reshape({6, -1});
    EXPECT_EQ(r.shape(), Dims({6, 4}));
    EXPECT_EQ(r.strides(), Dims({16, 4}));
    EXPECT_EQ(r.data(), kBase);
    EXPECT_EQ(a.reshape({-1}).shape(), Dims({24}));
    EXPECT_EQ(a.reshape({4, -1, 2}).shape(), Dims({4, 3, 2}));
    EXPECT_EQ(fake({1, 1}).reshape({}).ndim(), 0);
    EXPECT_EQ(fake({}).reshape({1, 1, 1}).shape(), Dims({1, 1, 1}));
    Array empty = fake({0, 3});
    EXPECT_EQ(empty.reshape({3, 0, 5}).shape(), Dims({3, 0, 5}));
    EXPECT_EQ(empty.reshape({5, -1}).shape(), Dims({5, 0}));
    // A slice that is still contiguous reshapes too.
    Array row = fake({4, 6}).slice({2});
    EXPECT_EQ(row.reshape({2, 3}).data(), kBase + 48);
}

TEST(Array, ReshapeRejectsWrongSizesAndNonContiguousArrays) {
    Array a = fake({2, 3, 4});
    EXPECT_THROW(a.reshape({-1, -1}), kiln::ShapeError);
    EXPECT_THROW(a.reshape({-2, 12}), kiln::ShapeError);
    EXPECT_THROW(a.reshape({5, -1}), kiln::ShapeError);
    EXPECT_THROW(fake({0, 3}).reshape({-1, 0}), kiln::ShapeError);
    const std::string size = error_of([&] { a.reshape({5, 5}); });
    EXPECT_NE(size.find("size 24"), std::string::npos) << size;
    EXPECT_NE(size.find("(5, 5)"), std::string::npos) << size;
    const std::string copy = error_of([&] { a.transpose().reshape({24}); });
    EXPECT_NE(copy.find("C-contiguous"), std::string::npos) << copy;
    EXPECT_NE(copy.find("cop"), std::string::npos) << copy;
    EXPECT_THROW(a.transpose().reshape({24}), kiln::ShapeError);
    // The same shape needs no copy, whatever the layout.
    Array t = a.transpose();
    EXPECT_EQ(t.reshape({4, 3, 2}).strides(), t.strides());
    EXPECT_EQ(t.reshape({4, -1, 2}).strides(), t.strides());
}

TEST(Array, TransposeReversesOrPermutesAxes) {
    Array a = fake({2, 3, 4});
    Array t = a.transpose();
    EXPECT_EQ(t.shape(), Dims({4, 3, 2}));
    EXPECT_EQ(t.strides(), Dims({4, 16, 48}));
    EXPECT_EQ(t.data(), kBase);
    Array p = a.transpose({1, 0, 2});
    EXPECT_EQ(p.shape(), Dims({3, 2, 4}));
    EXPECT_EQ(p.strides(), Dims({16, 48, 4}));
    Array n = a.transpose({-1, 0, 1});
    EXPECT_EQ(n.shape(), Dims({4, 2, 3}));
    EXPECT_EQ(n.strides(), Dims({4, 48, 16}));
    EXPECT_EQ(fake({}).transpose().ndim(), 0);
    EXPECT_EQ(fake({5}).transpose().shape(), Dims({5}));
}

TEST(Array, TransposeRejectsBadPermutations) {
    Array a = fake({2, 3, 4});
    EXPECT_THROW(a.transpose({0, 1}), kiln::ArgumentError);
    EXPECT_THROW(a.transpose({0, 1, 1}), kiln::ArgumentError);
    EXPECT_THROW(a.transpose({0, 1, 3}), kiln::ArgumentError);
    EXPECT_THROW(a.transpose({0, 1, -4}), kiln::ArgumentError);
    EXPECT_THROW(a.transpose({0, 2, -1}), kiln::ArgumentError);
}

struct SliceCase {
    std::int64_t length;
    std::optional<std::int64_t> start, stop;
    std::int64_t step;
    std::vector<std::int32_t> expected; // Python: list(range(length))[start:stop:step]
};

// Expectations generated with CPython's list slicing.
const SliceCase kSliceCases[] = {
    {10, 2, 8, 2, {2, 4, 6}},
    {10, std::nullopt, std::nullopt, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
    {10, -3, 100, 1, {7, 8, 9}},
    {10, 8, 2, -2, {8, 6, 4}},
    {10, 100, -100, -3, {9, 6, 3, 0}},
    {10, 5, 5, 1, {}},
    {10, -100, 3, 1, {0, 1, 2}},
    {10, std::nullopt, std::nullopt, 3, {0, 3, 6, 9}},
    {10, std::nullopt, std::nullopt, -4, {9, 5, 1}},
    {10, -1, std::nullopt, -1, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0}},
    {10, std::nullopt, -1, 1, {0, 1, 2, 3, 4, 5, 6, 7, 8}},
    {10, -2, -8, -2, {8, 6, 4}},
    {10, 3, -3, 1, {3, 4, 5, 6}},
    {0, std::nullopt, std::nullopt, 1, {}},
    {0, std::nullopt, std::nullopt, -1, {}},
    {1, std::nullopt, std::nullopt, -1, {0}},
    {5, 4, -6, -1, {4, 3, 2, 1, 0}},
    {5, -6, 10, 2, {0, 2, 4}},
    {7, 6, 0, -7, {6}},
    {7, 0, 7, 100, {0}},
    {5, -14, std::nullopt, 3, {0, 3}},
    {8, -14, -9, 2, {}},
    {0, -13, std::nullopt, 2, {}},
    {8, std::nullopt, 15, 5, {0, 5}},
    {3, -3, std::nullopt, 1, {0, 1, 2}},
    {3, -11, -11, 1, {}},
    {8, 2, -10, 2, {}},
    {1, 2, 3, -1, {}},
    {0, 2, -5, -1, {}},
    {7, -8, 7, -7, {}},
    {12, std::nullopt, 0, -1, {11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}},
    {5, -13, std::nullopt, -7, {}},
    {6, -11, -2, 3, {0, 3}},
    {0, 3, 11, 2, {}},
    {5, 4, 10, -3, {}},
    {7, 15, 7, 2, {}},
    {10, std::nullopt, 5, 2, {0, 2, 4}},
    {9, -3, -4, -7, {6}},
    {0, 4, std::nullopt, -7, {}},
    {0, -11, -3, -1, {}},
    {6, std::nullopt, 2, -7, {5}},
    {4, 12, 7, 3, {}},
    {6, -3, -11, -3, {3, 0}},
    {1, std::nullopt, -15, 3, {}},
    {7, -15, std::nullopt, 3, {0, 3, 6}},
    {8, -5, 7, -3, {}},
    {8, 12, 12, 1, {}},
    {10, -3, std::nullopt, 5, {7}},
    {10, std::nullopt, std::nullopt, 5, {0, 5}},
    {3, std::nullopt, -14, -7, {2}},
};

TEST(Array, SlicesFollowPythonRules) {
    for (const SliceCase& c : kSliceCases) {
        HostArray host({c.length});
        const Slice s{c.start, c.stop, c.step};
        Array view = host.array.slice({s});
        const std::string what = "length " + std::to_string(c.length) + ", " +
                                 (c.start ? std::to_string(*c.start) : "None") + ":" +
                                 (c.stop ? std::to_string(*c.stop) : "None") + ":" +
                                 std::to_string(c.step);
        ASSERT_EQ(view.ndim(), 1) << what;
        EXPECT_EQ(view.shape()[0], static_cast<std::int64_t>(c.expected.size())) << what;
        EXPECT_EQ(view.strides()[0], 4 * c.step) << what;
        EXPECT_EQ(elements(view), c.expected) << what;
        if (!c.expected.empty()) {
            EXPECT_EQ(view.data(), host.array.data() + 4 * static_cast<CUdeviceptr>(c.expected[0]))
                << what;
        }
    }
}

TEST(Array, SliceOffsetsAndStridesInBytes) {
    Array a = fake({10});
    Array s = a.slice({Slice::range(2, 8, 2)});
    EXPECT_EQ(s.shape(), Dims({3}));
    EXPECT_EQ(s.strides(), Dims({8}));
    EXPECT_EQ(s.data(), kBase + 8);
    Array r = a.slice({Slice{std::nullopt, std::nullopt, -1}});
    EXPECT_EQ(r.strides(), Dims({-4}));
    EXPECT_EQ(r.data(), kBase + 36);
    Array m = fake({4, 5}, DType::float64)
                  .slice({Slice{std::nullopt, std::nullopt, -1}, Slice::range(1, 5, 2)});
    EXPECT_EQ(m.shape(), Dims({4, 2}));
    EXPECT_EQ(m.strides(), Dims({-40, 16}));
    EXPECT_EQ(m.data(), kBase + 120 + 8);
    // Slicing a reversed view walks back from its own start.
    Array rr = r.slice({Slice::range(1, 4)});
    EXPECT_EQ(rr.data(), kBase + 32);
    EXPECT_EQ(rr.strides(), Dims({-4}));
}

TEST(Array, PositionsDropTheirDimension) {
    Array a = fake({4, 5}, DType::float64);
    Array e = a.slice({1, 2});
    EXPECT_EQ(e.ndim(), 0);
    EXPECT_EQ(e.size(), 1);
    EXPECT_EQ(e.data(), kBase + 40 + 16);
    Array last = a.slice({-1});
    EXPECT_EQ(last.shape(), Dims({5}));
    EXPECT_EQ(last.strides(), Dims({8}));
    EXPECT_EQ(last.data(), kBase + 120);
    Array column = a.slice({Slice::all(), -2});
    EXPECT_EQ(column.shape(), Dims({4}));
    EXPECT_EQ(column.strides(), Dims({40}));
    EXPECT_EQ(column.data(), kBase + 24);
    // Missing trailing indices take everything.
    EXPECT_EQ(a.slice({}).shape(), Dims({4, 5}));
    EXPECT_EQ(a.slice({Slice::range(1, 3)}).shape(), Dims({2, 5}));
}

TEST(Array, SlicesOfThreeDimensionsSelectTheRightElements) {
    HostArray host({4, 5, 6});
    Array view =
        host.array.slice({Slice{std::nullopt, std::nullopt, -2}, 3, Slice::range(-1, 0, -2)});
    EXPECT_EQ(view.shape(), Dims({2, 3}));
    std::vector<std::int32_t> expected;
    for (int i : {3, 1})
        for (int k : {5, 3, 1})
            expected.push_back(i * 30 + 3 * 6 + k);
    EXPECT_EQ(elements(view), expected);
    Array t = host.array.transpose({2, 0, 1}).slice({Slice::range(1, 6, 3)});
    expected.clear();
    for (int k : {1, 4})
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 5; ++j)
                expected.push_back(i * 30 + j * 6 + k);
    EXPECT_EQ(elements(t), expected);
}

TEST(Array, SliceRejectsBadIndices) {
    Array a = fake({4, 5});
    EXPECT_THROW(a.slice({4}), kiln::ArgumentError);
    EXPECT_THROW(a.slice({0, 5}), kiln::ArgumentError);
    EXPECT_THROW(a.slice({0, -6}), kiln::ArgumentError);
    EXPECT_THROW(a.slice({Slice::range(0, 4, 0)}), kiln::ArgumentError);
    EXPECT_THROW(a.slice({0, 0, 0}), kiln::ArgumentError);
    const std::string message = error_of([&] { a.slice({-5}); });
    EXPECT_NE(message.find("index -5 is out of bounds for axis 0 with size 4"), std::string::npos)
        << message;
    const std::string zero = error_of([&] { a.slice({Slice::all(), Slice::range(0, 4, 0)}); });
    EXPECT_NE(zero.find("step"), std::string::npos) << zero;
    EXPECT_THROW(fake({}).slice({0}), kiln::ArgumentError);
}

TEST(Array, HugeStepsDoNotOverflow) {
    HostArray host({10});
    const std::int64_t most = std::numeric_limits<std::int64_t>::max();
    const std::int64_t least = std::numeric_limits<std::int64_t>::min();
    EXPECT_EQ(elements(host.array.slice({Slice{std::nullopt, std::nullopt, most}})),
              std::vector<std::int32_t>{0});
    EXPECT_EQ(elements(host.array.slice({Slice{std::nullopt, std::nullopt, least}})),
              std::vector<std::int32_t>{9});
    EXPECT_EQ(elements(host.array.slice({Slice{least, most, 3}})),
              (std::vector<std::int32_t>{0, 3, 6, 9}));
}

TEST(Array, BroadcastToUsesZeroStrides) {
    Array column = fake({3, 1});
    Array b = column.broadcast_to({2, 3, 4});
    EXPECT_EQ(b.shape(), Dims({2, 3, 4}));
    EXPECT_EQ(b.strides(), Dims({0, 4, 0}));
    EXPECT_EQ(b.data(), kBase);
    EXPECT_EQ(fake({3}).broadcast_to({2, 3}).strides(), Dims({0, 4}));
    EXPECT_EQ(fake({}).broadcast_to({2, 2}).strides(), Dims({0, 0}));
    EXPECT_EQ(fake({0}).broadcast_to({2, 0}).shape(), Dims({2, 0}));
    EXPECT_EQ(fake({1}).broadcast_to({0}).shape(), Dims({0}));
    HostArray host({3});
    EXPECT_EQ(elements(host.array.broadcast_to({2, 3})),
              (std::vector<std::int32_t>{0, 1, 2, 0, 1, 2}));
}

TEST(Array, BroadcastToRejectsIncompatibleShapes) {
    EXPECT_THROW(fake({2, 3}).broadcast_to({4, 3}), kiln::ShapeError);
    EXPECT_THROW(fake({2, 3}).broadcast_to({3}), kiln::ShapeError);
    EXPECT_THROW(fake({3}).broadcast_to({0}), kiln::ShapeError);
    EXPECT_THROW(fake({1}).broadcast_to({-1}), kiln::ShapeError);
    const std::string message = error_of([] { fake({2, 3}).broadcast_to({4, 3}); });
    EXPECT_NE(message.find("(2, 3)"), std::string::npos) << message;
    EXPECT_NE(message.find("(4, 3)"), std::string::npos) << message;
}

TEST(BroadcastShapes, FollowsNumPy) {
    EXPECT_EQ(kiln::broadcast_shapes({{2, 3}, {3}}), Dims({2, 3}));
    EXPECT_EQ(kiln::broadcast_shapes({{2, 1}, {1, 3}}), Dims({2, 3}));
    EXPECT_EQ(kiln::broadcast_shapes({{5, 1, 4}, {3, 1}, {}}), Dims({5, 3, 4}));
    EXPECT_EQ(kiln::broadcast_shapes({{0}, {1}}), Dims({0}));
    EXPECT_EQ(kiln::broadcast_shapes({{2, 0}, {2, 1}}), Dims({2, 0}));
    EXPECT_EQ(kiln::broadcast_shapes({{5}}), Dims({5}));
    EXPECT_EQ(kiln::broadcast_shapes({}), Dims());
    const Dims shapes[] = {{7, 1}, {1, 8}};
    EXPECT_EQ(kiln::broadcast_shapes(shapes, 2), Dims({7, 8}));
}

TEST(BroadcastShapes, ErrorNamesEveryShape) {
    EXPECT_EQ(error_of([] {
                  kiln::broadcast_shapes({{2, 3}, {4}});
              }),
              "shapes (2, 3) and (4,) do not broadcast");
    EXPECT_EQ(error_of([] {
                  kiln::broadcast_shapes({{2, 3}, {1}, {4}});
              }),
              "shapes (2, 3), (1,) and (4,) do not broadcast");
    EXPECT_THROW(kiln::broadcast_shapes({{0}, {3}}), kiln::ShapeError);
}

TEST(Array, HostCopiesCheckBeforeTouchingTheDevice) {
    Array a = fake({4});
    EXPECT_THROW(a.to_host<std::int32_t>(), kiln::ArgumentError);
    EXPECT_THROW(a.to_host<double>(), kiln::ArgumentError);
    std::vector<float> host(2);
    EXPECT_THROW(a.slice({Slice::range(0, 4, 2)}).copy_from_host_bytes(host.data()),
                 kiln::ArgumentError);
    // Nothing to copy: no device needed.
    EXPECT_TRUE(fake({0, 3}).to_host<float>().empty());
    fake({0}).copy_from_host_bytes(nullptr);
}

TEST(Creation, EmptyArraysNeedNoDevice) {
    Array e = kiln::empty({0, 4}, DType::float64);
    EXPECT_EQ(e.shape(), Dims({0, 4}));
    EXPECT_EQ(e.strides(), Dims({32, 8}));
    EXPECT_EQ(e.size(), 0);
    EXPECT_NE(e.owner(), nullptr);
    EXPECT_EQ(kiln::zeros({3, 0}, DType::int8).size(), 0);
    EXPECT_EQ(kiln::full({0}, 1.5, DType::float32).size(), 0);
    EXPECT_EQ(kiln::full({0}, -1, DType::uint64).size(), 0);
    EXPECT_EQ(kiln::arange(0, 0, 1, DType::int32).size(), 0);
    EXPECT_EQ(kiln::arange(5, 0, 1, DType::int32).shape(), Dims({0}));
    EXPECT_EQ(kiln::from_host_bytes(nullptr, {0}, DType::float32).size(), 0);
}

TEST(Creation, RejectsBadArguments) {
    EXPECT_THROW(kiln::empty({-1}, DType::float32), kiln::ArgumentError);
    EXPECT_THROW(kiln::empty({1ll << 40, 1ll << 40}, DType::float32), kiln::ArgumentError);
    EXPECT_THROW(kiln::arange(0, 10, 0, DType::float32), kiln::ArgumentError);
    EXPECT_THROW(kiln::arange(0, std::nan(""), 1, DType::float32), kiln::ArgumentError);
    EXPECT_THROW(kiln::arange(0, 1e300, 1e-300, DType::float32), kiln::ArgumentError);
}

TEST(InternalKernels, SourceCompilesWithNvrtc) {
    kiln::Compiler compiler(nullptr);
    kiln::CompileOptions options;
    options.arch = "sm_90";
    options.options = {"--fmad=false"};
    auto program = compiler.compile(kiln::detail::internal_kernel_source(), options);
    EXPECT_GT(program->cubin().size(), 0u);
    for (const char* name :
         {"kiln_fill_pattern64", "kiln_arange_bool", "kiln_arange_int8", "kiln_arange_uint64",
          "kiln_arange_float16", "kiln_arange_bfloat16", "kiln_arange_complex128"})
        EXPECT_NE(program->cubin().find(name), std::string::npos) << name;
}
