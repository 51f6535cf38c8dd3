#pragma once
// Kernels written the way CuPy's own library writes them (cupy/_core, cupy/random, cupyx/scipy),
// one per construct of CuPy's kernel prelude, headers and raw-array API that a port relies on.
// The CPU suite (test_cupy_library_kernels.cpp) compiles each with NVRTC; the GPU suite
// (test_cupy_library_kernels_gpu.cpp) runs the same definitions against host-computed values.

#include "kiln/kiln.hpp"

#include <string>

namespace cupy_library {

/// searchsorted as CuPy writes it: the operation leaves early through a macro of the preamble,
/// which must end only the current element (the output is 8 bytes, the input 4: a vectorized
/// thread handles several elements).
inline kiln::ElementwiseKernel searchsorted() {
    kiln::ElementwiseOptions options;
    options.preamble = "#define SEARCHSORTED_DONE(value) { y = (value); return; }\n";
    return kiln::ElementwiseKernel("S x, raw T bins, int64 n_bins, bool right", "int64 y",
                                   R"(
        if (x != x) SEARCHSORTED_DONE(n_bins);
        if (n_bins == 0) SEARCHSORTED_DONE(0);
        long long lo = 0, hi = n_bins;
        while (lo < hi) {
            const long long mid = lo + (hi - lo) / 2;
            const bool go_right = right ? !(x < bins[mid]) : bins[mid] < x;
            if (go_right) lo = mid + 1; else hi = mid;
        }
        y = lo;
    )",
                                   "cupy_searchsorted", options);
}

/// An early `return` written in the operation itself, in a flat vectorized layout.
inline kiln::ElementwiseKernel clip_negative_early() {
    return kiln::ElementwiseKernel("T x", "T y", "if (x < 0) { y = 0; return; } y = x * 2",
                                   "clip_negative_early");
}

/// A macro of the preamble that returns before the output is assigned: the element keeps the
/// value the output had, as in CuPy, so the generated code must read the output first.
inline kiln::ElementwiseKernel skip_negative() {
    kiln::ElementwiseOptions options;
    options.preamble = "#define SKIP_NEGATIVE(v) \\\n    if ((v) < 0) return;\n";
    return kiln::ElementwiseKernel("T x", "T y", "SKIP_NEGATIVE(x); y = x * 2", "skip_negative",
                                   options);
}

/// CuPy's mat_ptrs pattern: (n, 1) inputs broadcast to the given (n, m) output, and the index
/// object's per-dimension index.
inline kiln::ElementwiseKernel mat_ptrs() {
    return kiln::ElementwiseKernel("uint64 base, uint64 stride", "uint64 out",
                                   "out = base + _ind.get()[_ind.ndim - 1] * stride",
                                   "cupy_mat_ptrs");
}

/// cupyx.scipy.ndimage's pattern: dimensions kept (reduce_dims off), each element's index per
/// dimension from `_ind.get()`, `_ind.ndim` as a compile-time constant.
inline kiln::ElementwiseKernel index_digits() {
    kiln::ElementwiseOptions options;
    options.reduce_dims = false;
    return kiln::ElementwiseKernel("T x", "int64 y", R"(
        long long digits = 0;
        for (int d = 0; d < _ind.ndim; ++d) digits = digits * 1000 + _ind.get()[d];
        y = digits * 10 + _ind.ndim;
    )",
                                   "cupy_index_digits", options);
}

/// M_PI and friends in an operation, with no include.
inline kiln::ElementwiseKernel math_constants() {
    return kiln::ElementwiseKernel("float64 x", "float64 y, float64 c",
                                   "y = x * M_PI; c = M_1_PI + M_SQRT2 * 0 + M_E * 0",
                                   "cupy_math_constants");
}

/// atomicAdd on signed and unsigned 64-bit integers, into raw histograms.
inline kiln::ElementwiseKernel histogram64() {
    return kiln::ElementwiseKernel(
        "int64 x, int32 bin, raw int64 hist, raw uint64 uhist", "int64 y",
        "atomicAdd(&hist[bin], x); atomicAdd(&uhist[bin], (unsigned long long)x); y = x",
        "cupy_histogram64");
}

/// The raw-array API on a 2-D raw array: size(), shape(), strides() in bytes, x[i] in C order,
/// x[idx] with per-dimension indices, and decltype(x)::index_t.
inline kiln::ElementwiseKernel raw_methods() {
    return kiln::ElementwiseKernel("raw T x", "T a, T b, int64 s0, int64 s1, int64 n, int64 cols",
                                   R"(
        typedef decltype(x)::index_t index_t;
        const index_t c = x.shape()[1];
        const index_t idx[2] = {(index_t)i / c, (index_t)i % c};
        a = x[i];
        b = x[idx];
        s0 = x.strides()[0];
        s1 = x.strides()[1];
        n = x.size();
        cols = c;
    )",
                                   "cupy_raw_methods");
}

/// x[i] on a raw array of any number of dimensions, in C order over its own shape.
inline kiln::ElementwiseKernel raw_linear() {
    return kiln::ElementwiseKernel("raw T x", "T y", "y = x[i]", "cupy_raw_linear");
}

/// complex<T> in the global namespace with real()/imag() setters, and thrust::complex.
inline kiln::ElementwiseKernel complex_setters() {
    return kiln::ElementwiseKernel("complex64 z", "complex64 w, float32 m", R"(
        complex<float> t = z;
        t.real(z.imag());
        t.imag(-z.real());
        thrust::complex<float> u = t;
        w = u;
        m = abs(u);
    )",
                                   "cupy_complex_setters");
}

/// cupy::type_traits in a generic operation.
inline kiln::ElementwiseKernel type_traits() {
    return kiln::ElementwiseKernel(
        "T x", "T y", "y = cupy::type_traits::is_floating_point<T>::value ? x * (T)2 : x + (T)1",
        "cupy_type_traits");
}

/// `raw` on a scalar parameter (CuPy ignores it) and a parameter named `_count`.
inline kiln::ElementwiseKernel raw_scalar_and_underscore_name() {
    return kiln::ElementwiseKernel("T x, raw T s, int32 _count", "T y", "y = x * s + _count",
                                   "cupy_raw_scalar");
}

/// CuPy's `float16` type name in an operation.
inline kiln::ElementwiseKernel half_round_trip() {
    return kiln::ElementwiseKernel("float32 x", "float32 y", "y = (float)float16(x)",
                                   "cupy_half_round_trip");
}

/// A cuda::std bit function: the generated head includes <cuda/std/bit> for it.
inline kiln::ElementwiseKernel popcount() {
    return kiln::ElementwiseKernel("uint32 x", "int32 y", "y = cuda::std::popcount(x)",
                                   "cupy_popcount");
}

/// A reduction whose identity is a scalar parameter: max(init, x...).
inline kiln::ReductionKernel max_from() {
    return kiln::ReductionKernel("T x, T init", "T y", "x", "max(a, b)", "y = a", "init",
                                 "cupy_max_from");
}

/// `_j` in a map expression: CuPy's linear index over (reduced axes, kept axes).
inline kiln::ReductionKernel sum_of_j() {
    return kiln::ReductionKernel("T x", "int64 y", "x * 0 + _j", "a + b", "y = a", "0",
                                 "cupy_sum_of_j", {"int64"});
}

/// A RawKernel source that includes one of CuPy's headers (`cupy/<header>`) and uses it.
inline std::string raw_source_with(const std::string& header) {
    std::string body;
    if (header == "complex.cuh")
        body = "const complex<float> z(in[i], 2.0f); out[i] = z.real() * z.imag();";
    else if (header == "carray.cuh")
        body = "complex<float> z(in[i]); z.imag(1.0f); out[i] = abs(z) * 0 + z.real() + "
               "(float)cupy::type_traits::is_floating_point<float>::value;";
    else if (header == "float16.cuh")
        body = "const float16 h = float16(in[i]); out[i] = __half2float(h);";
    else
        body = "out[i] = in[i] * CUDART_PI_F + (float)M_PI * 0;";
    return "#include <cupy/" + header + ">\n" +
           "extern \"C\" __global__ void cupy_header_kernel(const float* in, float* out, int n) {\n"
           "    const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
           "    if (i >= n) return;\n    " +
           body + "\n}\n";
}

/// What cupy_header_kernel writes for input @p x with @p header.
inline float raw_expected(const std::string& header, float x) {
    if (header == "complex.cuh") return x * 2.0f;
    if (header == "carray.cuh") return x + 1.0f;
    if (header == "float16.cuh") return x; // inputs are exact in half precision
    return x * 3.14159265358979f;
}

inline const char* const kCupyHeaders[] = {"complex.cuh", "carray.cuh", "float16.cuh",
                                           "math_constants.h"};

} // namespace cupy_library
