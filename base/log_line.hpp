#pragma once
// Kiln's own log lines, without spdlog's headers (about 1.3 s of parsing in each translation unit
// or unity batch that included kiln/log.hpp): a line is formatted with fmt's core only when its
// level is on, and handed to kiln::logger() in log.cpp, the one file that parses spdlog.

#include <fmt/core.h>

#include <string>
#include <utility>

namespace kiln::detail {

enum class LogLevel { debug, info, warn, error };

/// Whether kiln::logger() writes lines of @p level.
/// @throws ConfigError (on first use) when KILN_LOG_LEVEL is not a level name, as logger() does.
bool log_enabled(LogLevel level);

/// Writes @p line at @p level through kiln::logger().
void log_line(LogLevel level, const std::string& line);

template <typename... Args>
void log_at(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
    if (log_enabled(level)) log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args> void log_debug(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::debug, format, std::forward<Args>(args)...);
}
template <typename... Args> void log_info(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::info, format, std::forward<Args>(args)...);
}
template <typename... Args> void log_warn(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::warn, format, std::forward<Args>(args)...);
}
template <typename... Args> void log_error(fmt::format_string<Args...> format, Args&&... args) {
    log_at(LogLevel::error, format, std::forward<Args>(args)...);
}

} // namespace kiln::detail
