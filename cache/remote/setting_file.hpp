#pragma once
// The small files the remote tier's variables name (the Redis password, the TLS CA, client
// certificate and key), read one safe way: a FIFO planted at the path cannot hang start-up, and
// anything but a regular file is refused, with an error that names the variable.

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// The whole of the file at @p path, which the variable @p variable names.
/// @param holds what the file should hold, for the error message ("the Redis password").
/// @param max_size the most bytes it may have.
/// @param secret refuse a file that other users may read or write (a private key).
/// @throws kiln::ConfigError naming @p variable and @p path: not a regular file, unreadable,
/// over @p max_size, or (with @p secret) open to other users.
std::string read_setting_file(std::string_view variable, const std::string& path,
                              std::string_view holds, std::uint64_t max_size, bool secret = false);

} // namespace kiln::cache::detail
