#pragma once
// Reading and writing `<dir>/kiln.conf` (the public side is kiln/cache/settings.hpp).

#include "kiln/cache/config.hpp"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache::detail {

inline constexpr std::string_view kSettingsName = "kiln.conf";

/// What the settings file holds, checked.
struct SettingsFile {
    std::vector<std::pair<std::string, std::string>> values; ///< name, value; in file order
    std::string distrust; ///< why the file is not used (a link, another's, unreadable), or ""
    bool own = true;      ///< written by this user (a team cache's file may be another member's)
};

/// Read the settings file of @p config's directory; a missing file holds nothing. An untrusted or
/// unreadable file is not parsed: distrust says why. @throws ConfigError naming the file for a
/// line without `=`, an unknown key, or a value that does not parse.
SettingsFile read_settings_file(const Config& config);

/// Apply the settings file to @p config, where no environment variable overrides it. An
/// untrusted file, or another team member's that does not parse, is ignored with one warning.
/// @throws ConfigError as read_settings_file() for this user's own file.
void apply_settings(Config& config);

} // namespace kiln::cache::detail
