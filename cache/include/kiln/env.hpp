#pragma once
/// @file
/// Reading Kiln's environment variables (the README lists them). A value that cannot be parsed is a
/// kiln::ConfigError naming the variable, never a silent default.

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::env {

/// The raw value, or nullopt when unset or empty.
std::optional<std::string> get(const char* name);

/// `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` (any case); @p fallback when unset.
/// @throws ConfigError for any other value.
bool get_flag(const char* name, bool fallback);

/// A size such as `2G`, `500M`, `64k` or `1048576` (binary units); @p fallback when unset.
/// @throws ConfigError when it does not parse.
std::uint64_t get_size(const char* name, std::uint64_t fallback);

/// Parse a size as get_size() does. @throws ConfigError naming @p what.
std::uint64_t parse_size(const std::string& text, const std::string& what);

} // namespace kiln::env
