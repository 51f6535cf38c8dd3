#pragma once
// How every part of the cache reports a problem: through kiln::logger(), and never by throwing.
// A cache failure is a miss, not the user's error, so a logger that cannot be made (a bad
// KILN_LOG_LEVEL) must not turn one into an exception either. Shared by the directory and the
// remote tier, which is why it sits above both; declared here and defined in warn.cpp so that the
// files that warn do not parse spdlog.

#include <string>

namespace kiln::cache::detail {

/// Log a warning through kiln::logger(); never throws (a logging failure is dropped).
void warn(const std::string& message) noexcept;

/// Log at level info (what a warning said once already); never throws.
void log_info(const std::string& message) noexcept;

} // namespace kiln::cache::detail
