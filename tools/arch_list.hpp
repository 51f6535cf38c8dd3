#pragma once
// `--arch sm_80,sm_90`: the architectures a command compiles for.

#include <string>
#include <vector>

namespace kiln::tools {

/// The comma-separated architectures of @p text, normalized ("90" -> "sm_90"), each once, sorted
/// (so summaries read the same whatever order they were given in). @throws ArgumentError for a name
/// that is not an architecture, or none.
std::vector<std::string> parse_arch_list(const std::string& text);

} // namespace kiln::tools
