// Kiln's stand-in for CuPy's <cupy/math_constants.h>: the toolkit's CUDART_* constants and the
// POSIX M_* names (M_PI, M_SQRT2, ...) of Kiln's prelude.
#pragma once

#include <math_constants.h>

#include "kiln/prelude.cuh"
