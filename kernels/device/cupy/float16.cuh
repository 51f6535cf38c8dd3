// Kiln's stand-in for CuPy's <cupy/float16.cuh>: `float16` is the toolkit's __half, which converts
// to and from float and has arithmetic on the device.
#pragma once

#include <cuda_fp16.h>

typedef __half float16;
