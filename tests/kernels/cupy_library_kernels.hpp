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

// The last four of CuPy's real kernels that did not compile, with their definitions as CuPy's
// library writes them (cupyx.scipy.signal.windows, cupy/_core/_routines_statistics.pyx,
// cupy/_core/_routines_binary.pyx, cupyx.signal's channelizer).

/// cupyx.scipy.signal's general cosine window: a loop_prep whose last statement has no `;`
/// (CuPy adds one), `_ind.size()` in it, and a raw coefficient array.
inline kiln::ElementwiseKernel general_cosine() {
    kiln::ElementwiseOptions options;
    options.loop_prep = "const double delta { ( M_PI - -M_PI ) / ( _ind.size() - 1 ) }";
    return kiln::ElementwiseKernel("raw T a, int32 n", "T w", R"(
    const T fac { -M_PI + delta * i };
    T temp {};
    for ( int k = 0; k < n; k++ ) {
        temp += a[k] * cos( k * fac );
    }
    w = temp;
    )",
                                   "_general_cosine_kernel", options);
}

/// The preamble of CuPy's variance kernels: a squared distance for real and complex values.
inline const char* const kNormPreamble = R"(
template <typename T> __device__ T my_norm(T x) { return x * x; }
__device__ float my_norm(const complex<float>& x) { return norm(x); }
__device__ double my_norm(const complex<double>& x) { return norm(x); }
)";

/// CuPy's float32 variance core: `my_norm(x - mean)` with a float16 `x` and a float32 `mean`
/// (`half - float` must be a float, as CuPy's float16 makes it).
inline kiln::ReductionKernel var_core_float32() {
    kiln::ReductionOptions options;
    options.preamble = kNormPreamble;
    return kiln::ReductionKernel("S x, T mean, float32 alpha", "float32 out", "my_norm(x - mean)",
                                 "a + b", "out = alpha * a", "0", "cupy_var_core_float32", options);
}

/// The preamble of CuPy's NaN-aware variance: isnan on real and on complex values.
inline const char* const kNanvarPreamble = R"(
template <typename S, typename T>
__device__ T nanvar_impl(S x, T mean, long long alpha) {
    return (isnan(x) ? T(0) : T((x - mean) * (x - mean))) / alpha;
}

template <typename S, typename T>
__device__ T nanvar_impl(complex<S> x, complex<T> mean, long long alpha) {
    return (isnan(x) ? T(0) : T(norm(x - mean))) / alpha;
}
)";

/// CuPy's complex64 NaN-aware variance core.
inline kiln::ReductionKernel nanvar_core_complex64() {
    kiln::ReductionOptions options;
    options.preamble = kNanvarPreamble;
    return kiln::ReductionKernel(
        "complex64 x, complex64 sum, int64 _count, int64 ddof", "float32 out",
        "nanvar_impl(x, sum/static_cast<float>(_count), max(_count-ddof, 0LL))", "a + b", "out = a",
        "0", "_nanvar_core_complex64", options);
}

/// CuPy's count of the elements that are not NaN (here over complex values).
inline kiln::ReductionKernel count_non_nan() {
    return kiln::ReductionKernel("T in0", "int64 out0", "isnan(in0) ? 0 : 1", "a + b", "out0 = a",
                                 "0", "cupy_count_non_nan");
}

/// CuPy's bitwise_count: a preamble that includes <cupy/cuda_workaround.h> for std::is_signed.
inline kiln::ElementwiseKernel bitwise_count() {
    kiln::ElementwiseOptions options;
    options.preamble = R"(
#include <cupy/cuda_workaround.h>

template <typename T>
__device__ inline int _cupy_bitcount(T x) {
    if constexpr (sizeof(T) <= 4) {
        unsigned int ux = static_cast<unsigned int>(x);
        if constexpr (std::is_signed<T>::value) {
            if(x<0){
                ux = ~ux + 1u;
            }
        }
        return static_cast<int>(__popc(ux));
    } else {
        unsigned long long ux = static_cast<unsigned long long>(x);
        if constexpr (std::is_signed<T>::value) {
            if(x<0){
                ux = ~ux + 1ull;
            }
        }
        return static_cast<int>(__popcll(ux));
    }
}
)";
    return kiln::ElementwiseKernel("T in0", "uint8 out0", "out0 = _cupy_bitcount(in0);",
                                   "cupy_bitwise_count", options);
}

/// A RawModule with the head of cupyx.signal's channelizer: cooperative groups, CuPy's complex
/// and float16 headers and <cupy/cuda_workaround.h>, `std::is_same_v` defined by the module over
/// the header's std::is_same, `if constexpr` on thrust::complex, `typename U::value_type` and a
/// tile reduction. Each tile of 8 threads sums its (conjugated) inputs into one complex output.
inline const char* const kChannelizerSource = R"(
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cupy/complex.cuh>
#include <cupy/float16.cuh>
#include <cupy/cuda_workaround.h>

namespace std {
template< class T, class U >
inline constexpr bool is_same_v = is_same<T, U>::value;
}

namespace cg = cooperative_groups;

template<typename T, typename U, int M = 8, int WARPSIZE = 32>
__global__ void _cupy_tile_sum( const int n, const T *__restrict__ x, U *__restrict__ y ) {
    const auto block { cg::this_thread_block( ) };
    const auto tile_32 { cg::tiled_partition<WARPSIZE>( block ) };
    const auto tile { cg::tiled_partition<M>( tile_32 ) };
    const auto btx { blockIdx.x * blockDim.x + threadIdx.x };

    T v {};
    if ( btx < n ) {
        if constexpr ( std::is_same_v<T, thrust::complex<float>> || std::is_same_v<T, thrust::complex<double>> ) {
            v = thrust::conj( x[btx] );
        } else {
            v = x[btx];
        }
    }
    U vv {};
    if constexpr ( std::is_same_v<T, thrust::complex<float>> || std::is_same_v<T, thrust::complex<double>> ) {
        vv.real( cg::reduce( tile, v.real( ), cg::plus<typename U::value_type>( ) ) );
        vv.imag( cg::reduce( tile, v.imag( ), cg::plus<typename U::value_type>( ) ) );
    } else {
        vv.real( cg::reduce( tile, v, cg::plus<typename U::value_type>( ) ) );
    }
    if ( tile.thread_rank( ) == 0 && btx < n ) {
        y[btx / M] = vv;
    }
}
)";

/// The channelizer module's kernels, as CuPy names its name expressions.
inline const char* const kChannelizerKernels[] = {
    "_cupy_tile_sum<float,thrust::complex<float>>",
    "_cupy_tile_sum<thrust::complex<float>,thrust::complex<float>>",
    "_cupy_tile_sum<double,thrust::complex<double>>",
    "_cupy_tile_sum<thrust::complex<double>,thrust::complex<double>>"};

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
    else if (header == "cuda_workaround.h")
        body = "out[i] = in[i] * (float)std::is_same<std::uint32_t, unsigned int>::value + "
               "std::numeric_limits<float>::max() * 0.0f;";
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
    if (header == "cuda_workaround.h") return x;
    return x * 3.14159265358979f;
}

inline const char* const kCupyHeaders[] = {"complex.cuh", "carray.cuh", "float16.cuh",
                                           "math_constants.h", "cuda_workaround.h"};

} // namespace cupy_library
