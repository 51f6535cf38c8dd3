#pragma once
// Kiln's own small device kernels (pattern fill, arange), compiled once per architecture through
// Compiler::global() and loaded once per context, so repeated calls never recompile.

#include "kiln/dtype.hpp"
#include "kiln/module.hpp"
#include "kiln/stream.hpp"

#include <cuda.h>

#include <cstddef>

namespace kiln::detail {

/// The CUDA source of the internal kernels (exposed so a CPU test can compile it with NVRTC).
const char* internal_kernel_source();

/// The internal kernel @p name in the current context, compiled and loaded on first use.
/// @throws NoDeviceError, CudaError, CompileError (a bug in Kiln).
const Function& internal_function(const char* name);

/// Set @p count elements of @p itemsize bytes (1, 2, 4, 8 or 16) at @p pointer to the bit
/// pattern at @p element, queued on @p stream. Uses cuMemsetD8/D16/D32Async where the pattern
/// allows, a kernel otherwise. @p pointer must be aligned to min(itemsize, 8).
/// @throws ArgumentError for a misaligned pointer or an unsupported itemsize.
void fill_contiguous(CUdeviceptr pointer, std::size_t count, std::size_t itemsize,
                     const void* element, StreamRef stream);

/// out[i] = start + i * step (computed in double precision, no fused multiply-add), converted to
/// @p dtype as cast_scalar does, for i in [0, count), queued on @p stream.
void arange_contiguous(CUdeviceptr out, std::size_t count, DType dtype, double start, double step,
                       StreamRef stream);

} // namespace kiln::detail
