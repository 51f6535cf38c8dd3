#pragma once
// Whether an ElementwiseKernel's operation only ever assigns its outputs: then vector stores
// need not read the outputs first.

#include <string>
#include <vector>

namespace kiln::detail {

/// Whether @p operation only ever assigns each of @p outputs, unconditionally: statements of the
/// form `out = expression;` at the top level, no control flow, no other mention of the outputs,
/// and no macro of @p preamble that hides control flow (CuPy's searchsorted returns through one).
bool outputs_are_write_only(const std::string& operation, const std::vector<std::string>& outputs,
                            const std::string& preamble = {});

} // namespace kiln::detail
