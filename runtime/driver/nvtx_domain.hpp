#pragma once
// Kiln's NVTX domain, made on first use: NVTX looks for an attached tool then.

#include <nvtx3/nvToolsExt.h>

namespace kiln::detail {

/// The domain `kiln`.
nvtxDomainHandle_t nvtx_domain() noexcept;

} // namespace kiln::detail
