// Kiln's stand-in for CuPy's <cupy/carray.cuh>: what CuPy's generated code sees (the prelude's
// constants, 64-bit atomicAdd and cupy::type_traits, complex<T>, float16), and CArray / CIndexer
// with CuPy's methods, as aliases of Kiln's raw array and index types.
#pragma once

#include "cupy/complex.cuh"
#include "cupy/float16.cuh"
#include "kiln/elementwise.cuh"

template <class T, int ndim, bool c_contiguous = false, bool use_32bit_indexing = false>
using CArray =
    kiln::Raw<T, typename kiln::traits::conditional<use_32bit_indexing, int, long long>::type, ndim,
              c_contiguous>;
template <int ndim, bool use_32bit_indexing = false>
using CIndexer =
    kiln::Indexer<typename kiln::traits::conditional<use_32bit_indexing, int, long long>::type,
                  ndim>;
