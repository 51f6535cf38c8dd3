// Support code for generated kernels whose code uses it: the prelude, vectors, the index object
// and `raw` array parameters, with CuPy's method names so that CuPy kernel bodies port unchanged.
// A kernel whose code uses none of it includes only vec.cuh (source_writer.hpp).
#pragma once

#include "kiln/prelude.cuh"
#include "kiln/vec.cuh"

namespace kiln {

/// The index object of CuPy's generated code (`_ind`): `_ind.size()` is the number of elements
/// of the loop, `_ind.ndim` its number of dimensions (after Kiln merges what it can, unless the
/// kernel keeps its dimensions), and `_ind.get()` the per-dimension index of the current element.
template <class I, int ND = 1> struct Indexer {
    enum { ndim = ND }; // an enumerator: NVRTC emits a static constexpr member as a device global
    typedef I index_t;
    I n;
    I m_shape[ND > 0 ? ND : 1];
    I m_index[ND > 0 ? ND : 1];

    __device__ Indexer(I size)
        : n(size) {
        m_shape[0] = size;
    }
    __device__ Indexer(I size, const I* shape)
        : n(size) {
        for (int d = 0; d < ND; ++d)
            m_shape[d] = shape[d];
    }
    __device__ I size() const { return n; }
    __device__ const I* shape() const { return m_shape; }
    /// Makes @p i (a C-order linear index into the loop) the current element.
    __device__ void set(I i) {
        for (int d = ND - 1; d > 0; --d) {
            m_index[d] = i % m_shape[d];
            i /= m_shape[d];
        }
        m_index[0] = i;
    }
    __device__ const I* get() const { return m_index; }
};

/// A `raw` array parameter, with CuPy's API: `x.size()`, `x.shape()[k]`, `x.strides()[k]` in
/// bytes, `x[i]` with a C-order linear index over the array's own shape, whatever its number of
/// dimensions, and `x[idx]` with an array of ND per-dimension indices.
template <class T, class I, int ND, bool Contiguous> struct Raw {
    enum { ndim = ND };
    typedef I index_t;
    typedef T value_type;

    T* m_data;
    I m_shape[ND > 0 ? ND : 1];
    I m_strides[ND > 0 ? ND : 1]; // in bytes
    I m_size;

    __device__ T* data() const { return m_data; }
    __device__ I size() const { return m_size; }
    __device__ const I* shape() const { return m_shape; }
    __device__ const I* strides() const { return m_strides; }

    __device__ T& operator[](I index) const {
        if (Contiguous) return m_data[index];
        long long offset = 0;
        for (int d = ND - 1; d >= 0; --d) {
            offset += static_cast<long long>(index % m_shape[d]) * m_strides[d];
            index /= m_shape[d];
        }
        return *reinterpret_cast<T*>(reinterpret_cast<char*>(m_data) + offset);
    }
    template <class J> __device__ T& operator[](const J* index) const {
        long long offset = 0;
        for (int d = 0; d < ND; ++d)
            offset += static_cast<long long>(index[d]) * m_strides[d];
        return *reinterpret_cast<T*>(reinterpret_cast<char*>(m_data) + offset);
    }
};

} // namespace kiln

// NumPy's order (maximum, minimum, comparisons), for real and complex values alike.
#include "kiln/complex_order.cuh"
