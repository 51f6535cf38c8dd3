#pragma once
/// @file
/// Where the CUDA toolkit's headers are, for kernels that include cuda_fp16.h and friends.

#include <string>
#include <vector>

namespace kiln::detail {

/// KILN_CUDA_INCLUDE if set; else the `include` directory beside the loaded NVRTC library; else
/// the toolkit Kiln was built against. Computed once.
const std::string& cuda_include_dir();

/// NVRTC -I options for the toolkit's headers: the include directory and, since CUDA 13, its
/// `cccl` subdirectory (libcu++, which cooperative_groups.h and cuda_fp16.h include).
const std::vector<std::string>& cuda_include_options();

} // namespace kiln::detail
