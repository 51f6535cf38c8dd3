#pragma once
// What the tools refuse to compile from a recipe they did not write (`kiln warm --from-cache`,
// `kiln import --verify`): a cache or an archive may come from someone else, and some NVRTC
// options make the compiler write a file wherever the option says.

#include "kiln/cache/recipe.hpp"

#include <string>

namespace kiln::tools {

/// Why @p recipe must not be compiled by a tool, or "" when it may: an option that makes NVRTC
/// write a file (time traces, statistics, timing tables), or anything that would read a file
/// beyond its own headers and the toolkit's (runtime/compile/recipe_sandbox.hpp).
std::string recipe_refusal(const cache::Recipe& recipe);

} // namespace kiln::tools
