#pragma once
// Kiln's device-side headers (kernels/device/), embedded at build time and handed to NVRTC in
// memory, so their content is part of every cache key that uses them.

#include "kiln/compiler.hpp"

#include <vector>

namespace kiln::detail {

const std::vector<Header>& device_headers();

} // namespace kiln::detail
