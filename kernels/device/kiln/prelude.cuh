// What every generated kernel body sees besides its own parameters, so that kernels written for
// CuPy port unchanged: math constants, atomicAdd on 64-bit integers, and a few type traits. Kiln's
// names come first; CuPy's spellings (M_PI, cupy::type_traits) are aliases of them. Nothing here
// includes a toolkit header: every include costs compile time in every kernel.
#pragma once

namespace kiln {

/// Mathematical constants (the values of the POSIX M_* macros) as variable templates, in the style
/// of C++20's std::numbers: `kiln::numbers::pi_v<float>`. Not plain constexpr variables: NVRTC
/// gives every namespace-scope or static constexpr variable a device global (unused ones too),
/// and a module with globals takes the driver about three times as long to load; a variable
/// template's use folds to its value and leaves nothing behind.
namespace numbers {
template <class T> constexpr T e_v = T(2.718281828459045235360287471352662498);
template <class T> constexpr T log2e_v = T(1.442695040888963407359924681001892137);
template <class T> constexpr T log10e_v = T(0.434294481903251827651128918916605082);
template <class T> constexpr T ln2_v = T(0.693147180559945309417232121458176568);
template <class T> constexpr T ln10_v = T(2.302585092994045684017991454684364208);
template <class T> constexpr T pi_v = T(3.141592653589793238462643383279502884);
template <class T> constexpr T pi_2_v = T(1.570796326794896619231321691639751442);
template <class T> constexpr T pi_4_v = T(0.785398163397448309615660845819875721);
template <class T> constexpr T inv_pi_v = T(0.318309886183790671537767526745028724);
template <class T> constexpr T two_inv_pi_v = T(0.636619772367581343075535053490057448);
template <class T> constexpr T two_inv_sqrtpi_v = T(1.128379167095512573896158903121545172);
template <class T> constexpr T sqrt2_v = T(1.414213562373095048801688724209698079);
template <class T> constexpr T inv_sqrt2_v = T(0.707106781186547524400844362104849039);
} // namespace numbers

/// Atomic addition on 64-bit integers of either signedness (two's complement makes the unsigned
/// sum the signed one); returns the old value, as atomicAdd does.
__device__ __forceinline__ long long atomic_add(long long* address, long long value) {
    return static_cast<long long>(::atomicAdd(reinterpret_cast<unsigned long long*>(address),
                                              static_cast<unsigned long long>(value)));
}
__device__ __forceinline__ unsigned long long atomic_add(unsigned long long* address,
                                                         unsigned long long value) {
    return ::atomicAdd(address, value);
}

/// Small type traits for device code that cannot include <type_traits> cheaply.
namespace traits {
template <class T, T v> struct integral_constant {
    static constexpr T value = v;
    typedef T value_type;
    __host__ __device__ constexpr operator T() const { return v; }
};
// The traits' own (true_type, false_type): `value` an enumerator, not a static constexpr member,
// which NVRTC would emit as a device global in every kernel (see numbers above).
template <bool v> struct integral_constant<bool, v> {
    enum : bool { value = v };
    typedef bool value_type;
    __host__ __device__ constexpr operator bool() const { return v; }
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};
template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> struct is_floating_point_base : false_type {};
template <> struct is_floating_point_base<float> : true_type {};
template <> struct is_floating_point_base<double> : true_type {};
template <class T>
struct is_floating_point : is_floating_point_base<typename remove_cv<T>::type> {};
template <class T> struct is_integral_base : false_type {};
#define KILN_INTEGRAL(T)                                                                           \
    template <> struct is_integral_base<T> : true_type {};
KILN_INTEGRAL(bool)
KILN_INTEGRAL(char)
KILN_INTEGRAL(signed char)
KILN_INTEGRAL(unsigned char)
KILN_INTEGRAL(short)
KILN_INTEGRAL(unsigned short)
KILN_INTEGRAL(int)
KILN_INTEGRAL(unsigned int)
KILN_INTEGRAL(long)
KILN_INTEGRAL(unsigned long)
KILN_INTEGRAL(long long)
KILN_INTEGRAL(unsigned long long)
#undef KILN_INTEGRAL
template <class T> struct is_integral : is_integral_base<typename remove_cv<T>::type> {};
template <class T>
struct is_arithmetic
    : integral_constant<bool, is_integral<T>::value || is_floating_point<T>::value> {};
template <class T>
struct is_signed : integral_constant<bool, is_arithmetic<T>::value && T(-1) < T(0)> {};
template <class T>
struct is_unsigned : integral_constant<bool, is_integral<T>::value && !(T(-1) < T(0))> {};
template <class T> struct is_complex : false_type {}; // complex.cuh adds kiln::complex<T>
} // namespace traits

} // namespace kiln

// CuPy's spelling of atomicAdd on signed 64-bit integers (CUDA has only the unsigned one).
__device__ __forceinline__ long long atomicAdd(long long* address, long long value) {
    return kiln::atomic_add(address, value);
}

namespace cupy {
namespace type_traits = kiln::traits;
} // namespace cupy

// The POSIX names of the constants, as CuPy's device headers provide them.
#ifndef M_PI
#define M_E (kiln::numbers::e_v<double>)
#define M_LOG2E (kiln::numbers::log2e_v<double>)
#define M_LOG10E (kiln::numbers::log10e_v<double>)
#define M_LN2 (kiln::numbers::ln2_v<double>)
#define M_LN10 (kiln::numbers::ln10_v<double>)
#define M_PI (kiln::numbers::pi_v<double>)
#define M_PI_2 (kiln::numbers::pi_2_v<double>)
#define M_PI_4 (kiln::numbers::pi_4_v<double>)
#define M_1_PI (kiln::numbers::inv_pi_v<double>)
#define M_2_PI (kiln::numbers::two_inv_pi_v<double>)
#define M_2_SQRTPI (kiln::numbers::two_inv_sqrtpi_v<double>)
#define M_SQRT2 (kiln::numbers::sqrt2_v<double>)
#define M_SQRT1_2 (kiln::numbers::inv_sqrt2_v<double>)
#endif
