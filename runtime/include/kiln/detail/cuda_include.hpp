#pragma once
/// @file
/// Where the CUDA toolkit's headers are, for kernels that include cuda_fp16.h and friends.

#include <string>

namespace kiln::detail {

/// KILN_CUDA_INCLUDE if set; else the `include` directory beside the loaded NVRTC library; else
/// the toolkit Kiln was built against. Computed once.
const std::string& cuda_include_dir();

} // namespace kiln::detail
