#pragma once
// What a recipe Kiln did not write (an archive's, another member's, a remote tier's) may read when
// it is compiled again to check it (Compiler::reproduce(), `kiln import --verify`, `kiln warm
// --from-cache`): only its own headers, handed to NVRTC in memory, and the toolkit's `include/`
// and `include/cccl`. NVRTC would otherwise read any file an `#include` names (an absolute path,
// `..`, a file beside the recorded program name, a folder an `-I` option adds) into the cubin or
// into its error log, which the caller prints. The check runs before NVRTC and its refusal names
// only what the recipe itself says.

#include "kiln/cache/recipe.hpp"

#include <string>

namespace kiln::detail {

/// Why compiling @p recipe again could read a file outside its own headers and the toolkit's, or
/// "" when it cannot: every `#include` of its source and its headers (after comments and line
/// splices are removed) names one of its headers, or a toolkit header (no absolute path, no
/// `..`, and for a quoted name no file of that name where NVRTC looks first: beside the program
/// name, in the working directory for a relative one, and for an include in a header beside
/// `<working directory>/<header name>`, where NVRTC places it); no include directive is computed
/// by a macro; no option adds an include folder or a file to include.
std::string recipe_sandbox_refusal(const cache::Recipe& recipe);

} // namespace kiln::detail
