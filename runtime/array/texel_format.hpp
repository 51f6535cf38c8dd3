#pragma once
// The element formats CUDA arrays and textures hold (shared by cuda_array.cpp and texture.cpp):
// one channel of float32, float16 or an 8-, 16- or 32-bit integer, in 1, 2 or 4 channels.

#include "kiln/dtype.hpp"

#include <cuda.h>

namespace kiln::detail {

/// The driver's format for a channel of @p dtype.
/// @throws ArgumentError for a dtype no CUDA array or texture holds.
CUarray_format texel_format(DType dtype);

/// @throws ArgumentError unless @p channels is 1, 2 or 4.
void check_texel_channels(int channels);

} // namespace kiln::detail
