#pragma once
// The mixed chain of 16 calls that bench_graph times and test_graph_capture_gpu checks (so what is
// measured is what is verified): every front end once or more, on one stream, each call reading
// the one before. Outputs are given to every call that takes one; the two fused functions
// allocate theirs (under capture: graph allocations kept past it). The reductions over every
// element split across blocks, so they use reduction workspaces.

#include "kiln/kiln.hpp"

#include <vector>

namespace kiln::graph_chain {

constexpr std::int64_t kSide = 1024; // the data: kSide x kSide float32, also seen flat

inline auto make_fused_ew() {
    return fuse("chain_fused_ew", [](auto x, auto y) { return (x - y) * (x + y); });
}
inline auto make_fused_rows() {
    return fuse("chain_fused_rows", [](auto x) { return kiln::sum(x * x, -1); });
}

/// The kernels, made once; compiled on first use.
struct Kernels {
    ElementwiseKernel fma{"T x, T y, T c", "T z", "z = x * y + c", "chain_fma"};
    ReductionKernel l2norm{"T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "chain_l2norm"};
    RawKernel scale{R"(
extern "C" __global__ void chain_scale(const float* x, float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
})",
                    "chain_scale"};
    RawModule module{R"(
extern "C" __global__ void chain_shift(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
})"};
    RawKernel shift = module.get_function("chain_shift");
    decltype(make_fused_ew()) fused_ew = make_fused_ew();
    decltype(make_fused_rows()) fused_rows = make_fused_rows();
};

/// One chain's results (its inputs are shared: see run()).
struct Results {
    explicit Results(StreamRef stream)
        : t(8, Array()) {
        for (Array& a : t)
            a = empty({kSide * kSide}, DType::float32, stream);
        rows = empty({kSide}, DType::float32, stream);
        columns = empty({kSide}, DType::float32, stream);
        for (Array* s : {&total, &mean_value, &norm})
            *s = empty(Dims{}, DType::float32, stream);
    }
    std::vector<Array> t;                         // flat intermediates
    Array rows, columns, total, mean_value, norm; // given to reductions
    Array fused, fused_rows;                      // allocated by the fused functions
    /// Every output, for comparisons.
    std::vector<const Array*> all() const {
        std::vector<const Array*> out;
        for (const Array& a : t)
            out.push_back(&a);
        for (const Array* a : {&rows, &columns, &total, &mean_value, &norm, &fused, &fused_rows})
            out.push_back(a);
        return out;
    }
};

/// The 16 calls on @p stream, from @p x and @p y (kSide * kSide float32 each) into @p o.
inline void run(const Kernels& k, const Array& x, const Array& y, Results& o, StreamRef stream) {
    const int n = static_cast<int>(kSide * kSide);
    const Dims square{kSide, kSide};
    CallOptions call;
    call.stream = stream;
    OpOptions op;
    op.stream = stream;
    ReduceOptions reduce;
    reduce.stream = stream;
    const LaunchConfig raw{{static_cast<unsigned>((n + 255) / 256)}, {256}, 0, stream};
    std::vector<Array>& t = o.t;

    k.fma(call, x, y, 0.5f, t[0]);    // 1 elementwise
    k.fma(call, t[0], x, 1.0f, t[1]); // 2 elementwise
    op.out = &t[2];
    add(t[1], y, op); // 3 ready
    op.out = &t[3];
    multiply(t[2], 0.25f, op); // 4 ready
    reduce.out = &o.total;
    sum(t[3], {}, reduce); // 5 ready reduction, split
    k.l2norm(ReduceCall{1, false, stream}, t[3].reshape(square), o.rows); // 6 reduction, axis
    o.fused = k.fused_ew(call, t[3], y)[0];                               // 7 fused elementwise
    o.fused_rows = k.fused_rows(call, o.fused.reshape(square))[0];        // 8 fused reduction
    k.scale(raw, o.fused.data<float>(), t[4].data<float>(), 0.5f, n);     // 9 RawKernel
    k.shift(raw, t[4].data<float>(), t[5].data<float>(), n);              // 10 RawModule
    op.out = &t[6];
    maximum(t[5], t[0], op); // 11 ready
    reduce.out = &o.columns;
    max(t[6].reshape(square), {0}, reduce); // 12 ready, axis 0
    op.out = &t[7];
    abs(t[6], op);                    // 13 ready
    k.fma(call, t[7], y, 2.0f, t[6]); // 14 elementwise
    reduce.out = &o.mean_value;
    mean(t[6], {}, reduce);                                // 15 ready reduction
    k.l2norm(ReduceCall{{}, false, stream}, t[6], o.norm); // 16 reduction, split
}

} // namespace kiln::graph_chain
