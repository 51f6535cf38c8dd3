// Kiln's stand-in for CuPy's <cupy/float16.cuh>: `float16` is the toolkit's __half, which converts
// to and from float and has arithmetic on the device; mixed with another arithmetic type it
// promotes as CuPy's float16 does (`float16 - float` is a float: kiln/half.cuh).
#pragma once

#include <cuda_fp16.h>

#include "kiln/half.cuh"

typedef __half float16;
