// Kiln's complex type for generated kernels (complex64 and complex128). Layout-compatible with
// std::complex and C99 complex: two T, real first. CuPy's spellings are aliases of it:
// `complex<T>` in the global namespace and `thrust::complex<T>`.
#pragma once

#include "kiln/prelude.cuh"

namespace kiln {

template <class T> struct alignas(2 * sizeof(T)) complex {
    typedef T value_type; ///< the type of the real and imaginary parts, as std::complex names it
    T re, im;
    __host__ __device__ constexpr complex(T r = T(), T i = T())
        : re(r)
        , im(i) {}
    template <class U>
    __host__ __device__ constexpr explicit complex(const complex<U>& o)
        : re(T(o.re))
        , im(T(o.im)) {}
    __host__ __device__ constexpr T real() const { return re; }
    __host__ __device__ constexpr T imag() const { return im; }
    __host__ __device__ void real(T r) { re = r; }
    __host__ __device__ void imag(T i) { im = i; }
    __host__ __device__ complex& operator+=(const complex& o) {
        re += o.re;
        im += o.im;
        return *this;
    }
    __host__ __device__ complex& operator-=(const complex& o) {
        re -= o.re;
        im -= o.im;
        return *this;
    }
    __host__ __device__ complex& operator*=(const complex& o) { return *this = *this * o; }
    __host__ __device__ complex& operator/=(const complex& o) { return *this = *this / o; }
    friend __host__ __device__ complex operator+(const complex& a, const complex& b) {
        return {a.re + b.re, a.im + b.im};
    }
    friend __host__ __device__ complex operator-(const complex& a, const complex& b) {
        return {a.re - b.re, a.im - b.im};
    }
    friend __host__ __device__ complex operator-(const complex& a) { return {-a.re, -a.im}; }
    friend __host__ __device__ complex operator*(const complex& a, const complex& b) {
        return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
    }
    friend __host__ __device__ complex operator/(const complex& a, const complex& b) {
        // Smith's algorithm: avoids overflow for large |b|.
        if (fabs(b.re) >= fabs(b.im)) {
            const T r = b.im / b.re, d = b.re + b.im * r;
            return {(a.re + a.im * r) / d, (a.im - a.re * r) / d};
        }
        const T r = b.re / b.im, d = b.re * r + b.im;
        return {(a.re * r + a.im) / d, (a.im * r - a.re) / d};
    }
    friend __host__ __device__ bool operator==(const complex& a, const complex& b) {
        return a.re == b.re && a.im == b.im;
    }
    friend __host__ __device__ bool operator!=(const complex& a, const complex& b) {
        return !(a == b);
    }
};

template <class T> __host__ __device__ T real(const complex<T>& z) {
    return z.re;
}
template <class T> __host__ __device__ T imag(const complex<T>& z) {
    return z.im;
}
template <class T> __host__ __device__ complex<T> conj(const complex<T>& z) {
    return {z.re, -z.im};
}
template <class T> __host__ __device__ T abs(const complex<T>& z) {
    return hypot(z.re, z.im);
}
template <class T> __host__ __device__ T norm(const complex<T>& z) {
    return z.re * z.re + z.im * z.im;
}
template <class T> __host__ __device__ complex<T> polar(const T& m, const T& theta = T()) {
    return {m * ::cos(theta), m * ::sin(theta)};
}
template <class T> __host__ __device__ T arg(const complex<T>& z) {
    return atan2(z.im, z.re);
}
template <class T> __host__ __device__ complex<T> exp(const complex<T>& z) {
    const T e = ::exp(z.re);
    return {e * ::cos(z.im), e * ::sin(z.im)};
}
template <class T> __host__ __device__ complex<T> log(const complex<T>& z) {
    return {::log(abs(z)), arg(z)};
}
template <class T> __host__ __device__ complex<T> sqrt(const complex<T>& z) {
    const T m = abs(z);
    const T r = ::sqrt((m + fabs(z.re)) / 2);
    if (r == T(0)) return {T(0), T(0)};
    if (z.re >= T(0)) return {r, z.im / (2 * r)};
    return {fabs(z.im) / (2 * r), z.im >= T(0) ? r : -r};
}
template <class T> __host__ __device__ complex<T> sin(const complex<T>& z) {
    return {::sin(z.re) * ::cosh(z.im), ::cos(z.re) * ::sinh(z.im)};
}
template <class T> __host__ __device__ complex<T> cos(const complex<T>& z) {
    return {::cos(z.re) * ::cosh(z.im), -::sin(z.re) * ::sinh(z.im)};
}
template <class T> __host__ __device__ complex<T> log10(const complex<T>& z) {
    const complex<T> l = log(z);
    return {l.re / T(2.302585092994045684017991454684364208),
            l.im / T(2.302585092994045684017991454684364208)};
}
template <class T> __host__ __device__ complex<T> sinh(const complex<T>& z) {
    return {::sinh(z.re) * ::cos(z.im), ::cosh(z.re) * ::sin(z.im)};
}
template <class T> __host__ __device__ complex<T> cosh(const complex<T>& z) {
    return {::cosh(z.re) * ::cos(z.im), ::sinh(z.re) * ::sin(z.im)};
}
template <class T> __host__ __device__ complex<T> tan(const complex<T>& z) {
    return sin(z) / cos(z);
}
template <class T> __host__ __device__ complex<T> tanh(const complex<T>& z) {
    const complex<T> e2 = exp(complex<T>(2 * z.re, 2 * z.im));
    return (e2 - complex<T>(1)) / (e2 + complex<T>(1));
}
template <class T> __host__ __device__ complex<T> pow(const complex<T>& a, const complex<T>& b) {
    if (a.re == T(0) && a.im == T(0))
        return (b.re == T(0) && b.im == T(0)) ? complex<T>(1) : complex<T>(0);
    return exp(b * log(a));
}

// NaN, infinity and finiteness of a complex number, as NumPy and CuPy define them: NaN or infinite
// when either part is; finite when both are. Unqualified `isnan(z)` finds these by the argument's
// namespace; the toolkit's overloads for real types stay visible beside them in kiln::.
using ::isfinite;
using ::isinf;
using ::isnan;
template <class T> __host__ __device__ bool isnan(const complex<T>& z) {
    return isnan(z.re) || isnan(z.im);
}
template <class T> __host__ __device__ bool isinf(const complex<T>& z) {
    return isinf(z.re) || isinf(z.im);
}
template <class T> __host__ __device__ bool isfinite(const complex<T>& z) {
    return isfinite(z.re) && isfinite(z.im);
}

namespace traits {
template <class T> struct is_complex<complex<T>> : true_type {};
template <class T> struct is_complex<const complex<T>> : true_type {};
} // namespace traits

} // namespace kiln

template <class T> using complex = kiln::complex<T>;
namespace thrust {
template <class T> using complex = kiln::complex<T>;
using kiln::abs;
using kiln::arg;
using kiln::conj;
using kiln::cos;
using kiln::cosh;
using kiln::exp;
using kiln::isfinite;
using kiln::isinf;
using kiln::isnan;
using kiln::log;
using kiln::log10;
using kiln::norm;
using kiln::polar;
using kiln::pow;
using kiln::sin;
using kiln::sinh;
using kiln::sqrt;
using kiln::tan;
using kiln::tanh;
} // namespace thrust

// Make the math functions found unqualified in user operations, as CuPy's thrust::complex does.
using kiln::abs;
using kiln::arg;
using kiln::conj;
using kiln::imag;
using kiln::norm;
using kiln::polar;
using kiln::real;
