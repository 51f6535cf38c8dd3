// NumPy's order for generated kernels (every one: elementwise.cuh includes it). Complex numbers
// are ordered lexicographically (real parts first, imaginary parts on a tie), with a NaN in
// either part propagating through maximum / minimum and winning argmax / argmin, as numpy.max,
// min, argmax and argmin do. Every helper also takes real values, so one expression serves a
// kernel over any dtype. Self-contained: complex.cuh and reduction.cuh, which define complex and
// pair, are included only by kernels that use them.
#pragma once

namespace kiln {

template <class T> struct complex;
template <class A, class B> struct pair; // reduction.cuh defines it in reduction kernels

/// Whether @p v is NaN; for complex values, whether either part is.
template <class T> __host__ __device__ bool has_nan(const T& v) {
    return v != v;
}
template <class T> __host__ __device__ bool has_nan(const complex<T>& z) {
    return z.re != z.re || z.im != z.im;
}

/// a < b, a > b, a <= b, a >= b in NumPy's order; for complex values real parts first, then
/// imaginary parts. False when either value has a NaN part, as in NumPy.
template <class T> __host__ __device__ bool less(const T& a, const T& b) {
    return a < b;
}
template <class T> __host__ __device__ bool greater(const T& a, const T& b) {
    return a > b;
}
template <class T> __host__ __device__ bool less_equal(const T& a, const T& b) {
    return a <= b;
}
template <class T> __host__ __device__ bool greater_equal(const T& a, const T& b) {
    return a >= b;
}
template <class T> __host__ __device__ bool less(const complex<T>& a, const complex<T>& b) {
    return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im < b.im);
}
template <class T> __host__ __device__ bool greater(const complex<T>& a, const complex<T>& b) {
    return less(b, a);
}
template <class T> __host__ __device__ bool less_equal(const complex<T>& a, const complex<T>& b) {
    return (a.re < b.re && a.im == a.im && b.im == b.im) || (a.re == b.re && a.im <= b.im);
}
template <class T>
__host__ __device__ bool greater_equal(const complex<T>& a, const complex<T>& b) {
    return less_equal(b, a);
}

/// NumPy's maximum and minimum: the larger (smaller) in NumPy's order; @p a when either has a
/// NaN part and @p a does, else @p b when it does. Two equal values give @p a.
template <class T> __host__ __device__ T maximum(const T& a, const T& b) {
    return has_nan(a) || greater_equal(a, b) ? a : b;
}
template <class T> __host__ __device__ T minimum(const T& a, const T& b) {
    return has_nan(a) || less_equal(a, b) ? a : b;
}

/// argmax_merge / argmin_merge (reduction.cuh) on (complex value, index) pairs: the larger
/// (smaller) value in NumPy's order, a value with a NaN part above everything, the smaller index
/// on ties; an index below 0 marks "no element". Commutative and associative, so the first NaN
/// or the first extreme wins whatever order partial results meet in.
template <class T, class I>
__device__ pair<complex<T>, I> argmax_merge(const pair<complex<T>, I>& a,
                                            const pair<complex<T>, I>& b) {
    if (a.second < 0) return b;
    if (b.second < 0) return a;
    const bool an = has_nan(a.first), bn = has_nan(b.first);
    if (an != bn) return an ? a : b;
    if (!an && a.first != b.first) return greater(a.first, b.first) ? a : b;
    return a.second <= b.second ? a : b;
}
template <class T, class I>
__device__ pair<complex<T>, I> argmin_merge(const pair<complex<T>, I>& a,
                                            const pair<complex<T>, I>& b) {
    if (a.second < 0) return b;
    if (b.second < 0) return a;
    const bool an = has_nan(a.first), bn = has_nan(b.first);
    if (an != bn) return an ? a : b;
    if (!an && a.first != b.first) return less(a.first, b.first) ? a : b;
    return a.second <= b.second ? a : b;
}

} // namespace kiln
