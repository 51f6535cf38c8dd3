#pragma once
// What Kiln's own tests may ask a ReductionKernel beyond its public API.

#include "kiln/reduction_kernel.hpp"

#include <cstddef>
#include <string>

namespace kiln::detail {

struct ReductionKernelAccess {
    /// The source @p kernel generates for a call planned as on a device with @p multiprocessors
    /// (a call plans with the current device's count; source_for and compile_for have no device).
    static std::string source_on(const ReductionKernel& kernel, const Arg* args, std::size_t count,
                                 const ReduceCall& how, int multiprocessors);
};

} // namespace kiln::detail
