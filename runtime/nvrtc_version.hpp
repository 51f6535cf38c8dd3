#pragma once
// The exact NVRTC version ("13.0.88"). nvrtcVersion() gives only major.minor, so patch releases
// would share cache keys; the full version is read once from the library file itself.

#include <filesystem>
#include <string>

namespace kiln::detail {

/// The full NVRTC version, computed at most once per process. When the cache directory is given,
/// the answer is also remembered there per NVRTC install (path, size, mtime), so a fresh process
/// skips the scan of the ~100 MB library.
const std::string& nvrtc_full_version(const std::filesystem::path& memo_dir);

/// Find "release X.Y, VX.Y.Z" in a buffer; empty if absent. Exposed for tests.
std::string find_version_banner(const char* data, std::size_t size);

} // namespace kiln::detail
