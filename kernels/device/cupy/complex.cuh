// Kiln's stand-in for CuPy's <cupy/complex.cuh>: `complex<T>` and `thrust::complex<T>` with
// real()/imag() (getters and setters), arithmetic, comparison and the usual math functions.
#pragma once

#include "kiln/complex.cuh"
