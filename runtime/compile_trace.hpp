#pragma once
// KILN_COMPILE_TIME_TRACE: where NVRTC's --fdevice-time-trace JSON goes for a compile.

#include "kiln/cache/key.hpp"

#include <filesystem>

namespace kiln {
namespace cache {
class Store;
}

namespace detail {

/// Whether KILN_COMPILE_TIME_TRACE asks for traces. @throws ConfigError for an unparsable value.
bool compile_time_trace_enabled();

/// The path to hand to --fdevice-time-trace for @p key, without the ".json" that NVRTC appends:
/// beside the cache entry (`<dir>/<ab>/<key>`) when @p store is usable and writable, otherwise
/// in `kiln-time-trace/` under the temporary directory. Creates the directory. Never throws.
std::filesystem::path time_trace_base(const cache::Store* store, const cache::Key& key);

/// The trace NVRTC wrote for @p base, renamed to end in ".json" if this NVRTC did not append it.
/// Returns the final path, or an empty path when there is no trace.
std::filesystem::path finish_time_trace(const std::filesystem::path& base) noexcept;

} // namespace detail
} // namespace kiln
