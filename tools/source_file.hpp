#pragma once
// Reading a file the user named (a CUDA source, a manifest) with an error that says why not.

#include <filesystem>
#include <string>

namespace kiln::tools {

/// The bytes of @p path. @throws kiln::ArgumentError "cannot read WHAT 'PATH' (no such file)",
/// "(a directory)", "(permission denied)"... with what to do about it.
std::string read_user_file(const std::filesystem::path& path, const std::string& what);

} // namespace kiln::tools
