#pragma once
// Kiln's device-side headers (kernels/device/), embedded at build time and handed to NVRTC in
// memory, so their content is part of every cache key that uses them.

#include "kiln/compiler.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

const std::vector<Header>& device_headers();

/// CuPy's header names (`cupy/carray.cuh`, `cupy/complex.cuh`, `cupy/float16.cuh`,
/// `cupy/math_constants.h`), written as Kiln's own over device_headers(); handed to NVRTC with
/// them for RawKernel / RawModule source that includes one.
const std::vector<Header>& cupy_headers();

/// Adds cupy_headers() and device_headers() to @p options when @p source includes a `cupy/`
/// header, as RawModule and the generated kernels' preambles do (headers of the same name already
/// there are kept).
void add_cupy_headers(std::string_view source, CompileOptions& options);

} // namespace kiln::detail
