#pragma once
// How a call's arguments give the type placeholders of a kernel's parameter specs their dtypes,
// shared by ElementwiseKernel and ReductionKernel (CuPy's rules).

#include "kernel_params.hpp"
#include "kiln/call_arguments.hpp"
#include "kiln/dtype.hpp"

#include <array>
#include <cstddef>
#include <optional>

namespace kiln::detail {

/// Placeholder letter -> bound dtype, for `typedef float T;` lines.
using Bindings = std::array<std::optional<DType>, 128>;

/// Binds @p bindings from @p count arguments (the inputs, optionally followed by the outputs) and
/// writes each parameter's dtype, inputs then outputs, to @p dtypes (params.count() entries).
/// CuPy's order: output arrays bind placeholders first, then input arrays, then scalars, which
/// never contradict an array's binding. @throws ArgumentError naming the kernel (params.who).
void bind_types(const KernelParams& params, const Arg* args, std::size_t count, Bindings& bindings,
                DType* dtypes);

} // namespace kiln::detail
