#pragma once
// Reading a file the user named (a CUDA source, a manifest) with an error that says why not.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace kiln::tools {

/// The most read_user_file() reads: 64 MiB, far beyond any CUDA source or manifest.
inline constexpr std::size_t kMaxUserFile = std::size_t{64} << 20;

/// The bytes of @p path. @throws kiln::ArgumentError "cannot read WHAT 'PATH' (no such file)",
/// "(a directory)", "(permission denied)"... with what to do about it, or when it holds more
/// than @p max_bytes (counted while reading: `/dev/zero` is refused, not read forever).
std::string read_user_file(const std::filesystem::path& path, const std::string& what,
                           std::uint64_t max_bytes = kMaxUserFile);

} // namespace kiln::tools
