// 16-bit floats (the toolkit's __half and __nv_bfloat16) in expressions with other arithmetic
// types, as CuPy's float16 and bfloat16 behave: the 16-bit value converts to float and the
// usual arithmetic conversions go on from there, so `half - float` is a float, `half * double` a
// double and `half + int` a float. The toolkit's types alone make these ambiguous (a __half
// converts to float and to every integer type, and every arithmetic type converts to a __half).
// Compound assignment computes in float and rounds once, as CuPy's `*this = *this + rhs` does.
// Two 16-bit operands keep the toolkit's own 16-bit operators. isnan, isinf and isfinite take
// them too. Include after <cuda_fp16.h> and
// <cuda_bf16.h>; each type's operators come once its header was included (no `#pragma once`: a
// later include after the other toolkit header adds that type's operators).

#include "kiln/prelude.cuh"

#ifndef KILN_HALF_MIXED_COMMON
#define KILN_HALF_MIXED_COMMON
namespace kiln {
namespace detail_half {
// Whether T is one of C++'s arithmetic types (bool, the integers, float, double).
template <class T>
struct mixes : traits::integral_constant<bool, traits::is_arithmetic<T>::value> {};
template <class T, class R = void> using if_mixes = typename traits::enable_if<mixes<T>::value, R>;
} // namespace detail_half
} // namespace kiln
#endif

#define KILN_HALF_MIXED_ARITHMETIC(H, TO_FLOAT, OP)                                                \
    template <class S>                                                                             \
    __host__ __device__ __forceinline__                                                            \
        typename kiln::detail_half::if_mixes<S, decltype(0.0f OP S())>::type                       \
        operator OP(const H& a, S b) {                                                             \
        return TO_FLOAT(a) OP b;                                                                   \
    }                                                                                              \
    template <class S>                                                                             \
    __host__ __device__ __forceinline__                                                            \
        typename kiln::detail_half::if_mixes<S, decltype(S() OP 0.0f)>::type                       \
        operator OP(S a, const H& b) {                                                             \
        return a OP TO_FLOAT(b);                                                                   \
    }                                                                                              \
    template <class S>                                                                             \
    __host__ __device__ __forceinline__ typename kiln::detail_half::if_mixes<S, H&>::type          \
    operator OP##=(H& a, S b) {                                                                    \
        a = H(static_cast<float>(TO_FLOAT(a) OP b));                                               \
        return a;                                                                                  \
    }

#define KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, OP)                                                \
    template <class S>                                                                             \
    __host__ __device__ __forceinline__ typename kiln::detail_half::if_mixes<S, bool>::type        \
    operator OP(const H& a, S b) {                                                                 \
        return TO_FLOAT(a) OP b;                                                                   \
    }                                                                                              \
    template <class S>                                                                             \
    __host__ __device__ __forceinline__ typename kiln::detail_half::if_mixes<S, bool>::type        \
    operator OP(S a, const H& b) {                                                                 \
        return a OP TO_FLOAT(b);                                                                   \
    }

// NaN, infinity and finiteness, as CuPy's float16 has them (the toolkit's overloads for float,
// double and long double would all match a 16-bit value).
#define KILN_HALF_CLASSIFY(H, IS_NAN, IS_INF)                                                      \
    __host__ __device__ __forceinline__ bool isnan(const H& a) {                                   \
        return IS_NAN(a);                                                                          \
    }                                                                                              \
    __host__ __device__ __forceinline__ bool isinf(const H& a) {                                   \
        return IS_INF(a);                                                                          \
    }                                                                                              \
    __host__ __device__ __forceinline__ bool isfinite(const H& a) {                                \
        return !IS_NAN(a) && !IS_INF(a);                                                           \
    }

#define KILN_HALF_MIXED(H, TO_FLOAT)                                                               \
    KILN_HALF_MIXED_ARITHMETIC(H, TO_FLOAT, +)                                                     \
    KILN_HALF_MIXED_ARITHMETIC(H, TO_FLOAT, -)                                                     \
    KILN_HALF_MIXED_ARITHMETIC(H, TO_FLOAT, *)                                                     \
    KILN_HALF_MIXED_ARITHMETIC(H, TO_FLOAT, /)                                                     \
    KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, ==)                                                    \
    KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, !=)                                                    \
    KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, <)                                                     \
    KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, <=)                                                    \
    KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, >)                                                     \
    KILN_HALF_MIXED_COMPARISON(H, TO_FLOAT, >=)

#if defined(__CUDA_FP16_H__) && !defined(KILN_HALF_MIXED_FP16)
#define KILN_HALF_MIXED_FP16
KILN_HALF_MIXED(__half, __half2float)
KILN_HALF_CLASSIFY(__half, __hisnan, __hisinf)
#endif
#if defined(__CUDA_BF16_H__) && !defined(KILN_HALF_MIXED_BF16)
#define KILN_HALF_MIXED_BF16
KILN_HALF_MIXED(__nv_bfloat16, __bfloat162float)
KILN_HALF_CLASSIFY(__nv_bfloat16, __hisnan, __hisinf)
#endif

#undef KILN_HALF_CLASSIFY
#undef KILN_HALF_MIXED
#undef KILN_HALF_MIXED_COMPARISON
#undef KILN_HALF_MIXED_ARITHMETIC
