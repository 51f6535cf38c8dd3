#pragma once
/// @file
/// Reading environment variables and parsing flags and sizes. Kiln's own `KILN_*` variables are
/// read through kiln/settings.hpp, which uses these; a value that cannot be parsed is a
/// kiln::ConfigError naming the variable, never a silent default.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::env {

/// The raw value of a variable.
/// @param name the variable's name, e.g. `"KILN_CACHE_DIR"`.
/// @return its value, or nullopt when it is unset or empty.
std::optional<std::string> get(const char* name);

/// `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` (any case); @p fallback when unset.
/// @param name the variable's name.
/// @param fallback the value when the variable is unset or empty.
/// @return the flag's value.
/// @throws ConfigError for any other value.
bool get_flag(const char* name, bool fallback);

/// Parse a flag as get_flag() does.
/// @param text the value, e.g. `"yes"`.
/// @param what what the flag is, for the error message (a variable's name).
/// @return the flag's value.
/// @throws ConfigError naming @p what.
bool parse_flag(const std::string& text, std::string_view what);

/// A size such as `2G`, `500M`, `64k` or `1048576` (binary units); @p fallback when unset.
/// @param name the variable's name.
/// @param fallback the size in bytes when the variable is unset or empty.
/// @return the size in bytes.
/// @throws ConfigError when it does not parse.
std::uint64_t get_size(const char* name, std::uint64_t fallback);

/// A plain decimal number of at most 12 digits (no sign, no spaces), at most @p max.
/// @param text the digits.
/// @param max the largest value accepted.
/// @return the value, or nullopt when @p text is not such a number.
std::optional<std::uint64_t> parse_decimal(std::string_view text, std::uint64_t max);

/// Parse a size as get_size() does.
/// @param text the size, e.g. `"2G"`.
/// @param what what the size is, for the error message (a variable or option name).
/// @return the size in bytes.
/// @throws ConfigError naming @p what.
std::uint64_t parse_size(const std::string& text, const std::string& what);

} // namespace kiln::env
