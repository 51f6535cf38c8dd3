#pragma once
// How a call's arguments give the type placeholders of a kernel's parameter specs their dtypes,
// shared by ElementwiseKernel and ReductionKernel (CuPy's rules).

#include "kiln/call_arguments.hpp"
#include "kiln/dtype.hpp"
#include "kiln/param_spec.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace kiln::detail {

/// Placeholder letter -> bound dtype, for `typedef float T;` lines.
using Bindings = std::array<std::optional<DType>, 128>;

/// Binds @p bindings from @p count arguments (the inputs, optionally followed by the outputs) and
/// writes each parameter's dtype, inputs then outputs, to @p dtypes (inputs.size() +
/// outputs.size() entries). CuPy's order: output arrays bind placeholders first, then input
/// arrays, then scalars, which never contradict an array's binding. Errors are ArgumentErrors
/// prefixed with @p who (e.g. "ElementwiseKernel 'add'").
void bind_types(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                const Arg* args, std::size_t count, const std::string& who, Bindings& bindings,
                DType* dtypes);

} // namespace kiln::detail
