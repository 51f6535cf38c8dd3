#pragma once
// `--arch sm_80,sm_90`: the architectures a command compiles for, in the forms every command takes.

#include <string>
#include <vector>

namespace kiln::tools {

/// One `--arch` value as "sm_XY[a|f]": sm_90, 90 and 9.0 are all sm_90 (the same forms in every
/// command). @throws ArgumentError for a virtual architecture (compute_90: kiln writes cubins), a
/// name that is not an architecture, or one the NVRTC in use does not compile for (the message
/// lists those it does).
std::string parse_arch(const std::string& text);

/// The comma-separated architectures of @p text, each as parse_arch() takes it, each once, sorted
/// (so summaries read the same whatever order they were given in). @throws ArgumentError as
/// parse_arch(), or for none.
std::vector<std::string> parse_arch_list(const std::string& text);

} // namespace kiln::tools
