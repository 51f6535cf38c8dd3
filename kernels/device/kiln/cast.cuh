// kiln::cast<To>(value): NumPy's conversions between every pair of dtypes in generated code.
// 16-bit floats convert through float (a direct cast to double or to another integer type is
// ambiguous for __half); complex to real keeps the real part; real to complex has zero imaginary.
#pragma once

namespace kiln {

template <class T> struct complex; // complex.cuh defines it when a kernel uses complex values

template <class To, class From> struct Cast {
    static __device__ To run(const From& v) { return static_cast<To>(v); }
};
template <class From> struct Cast<bool, From> {
    static __device__ bool run(const From& v) { return v != From(0); }
};
template <class T, class From> struct Cast<complex<T>, From> {
    static __device__ complex<T> run(const From& v) {
        return complex<T>(Cast<T, From>::run(v), T(0));
    }
};
template <class To, class U> struct Cast<To, complex<U>> {
    static __device__ To run(const complex<U>& v) { return Cast<To, U>::run(v.re); }
};
template <class U> struct Cast<bool, complex<U>> {
    static __device__ bool run(const complex<U>& v) { return v.re != U(0) || v.im != U(0); }
};
template <class T, class U> struct Cast<complex<T>, complex<U>> {
    static __device__ complex<T> run(const complex<U>& v) { return complex<T>(T(v.re), T(v.im)); }
};

#define KILN_CAST_THROUGH_FLOAT(H, TO_FLOAT)                                                       \
    template <class To> struct Cast<To, H> {                                                       \
        static __device__ To run(const H& v) { return Cast<To, float>::run(TO_FLOAT(v)); }         \
    };                                                                                             \
    template <> struct Cast<H, H> {                                                                \
        static __device__ H run(const H& v) { return v; }                                          \
    };                                                                                             \
    template <> struct Cast<bool, H> {                                                             \
        static __device__ bool run(const H& v) { return TO_FLOAT(v) != 0.0f; }                     \
    };                                                                                             \
    template <class T> struct Cast<complex<T>, H> {                                                \
        static __device__ complex<T> run(const H& v) { return complex<T>(T(TO_FLOAT(v)), T(0)); }  \
    };                                                                                             \
    template <class U> struct Cast<H, complex<U>> {                                                \
        static __device__ H run(const complex<U>& v) { return H(float(v.re)); }                    \
    };

#ifdef __CUDA_FP16_H__
KILN_CAST_THROUGH_FLOAT(__half, __half2float)
#endif
#ifdef __CUDA_BF16_H__
KILN_CAST_THROUGH_FLOAT(__nv_bfloat16, __bfloat162float)
#endif
#if defined(__CUDA_FP16_H__) && defined(__CUDA_BF16_H__)
template <> struct Cast<__half, __nv_bfloat16> {
    static __device__ __half run(const __nv_bfloat16& v) { return __half(__bfloat162float(v)); }
};
template <> struct Cast<__nv_bfloat16, __half> {
    static __device__ __nv_bfloat16 run(const __half& v) { return __nv_bfloat16(__half2float(v)); }
};
#endif
#undef KILN_CAST_THROUGH_FLOAT

template <class To, class From> __device__ To cast(const From& v) {
    return Cast<To, From>::run(v);
}

} // namespace kiln
