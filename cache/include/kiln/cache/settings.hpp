#pragma once
/// @file
/// Settings kept in the cache directory, `<dir>/kiln.conf`, as `kiln cache config` shows and sets
/// them (like `ccache -M 5G`). Config::from_environment() applies them: a KILN_CACHE_* variable
/// overrides the file, the file overrides the default.
///
/// The file holds `key = value` lines; `#` starts a comment line. It is used only when it is a
/// regular file (never a link) owned by the current user, or, in a shared cache
/// (KILN_CACHE_SHARED=1), by any user but writable by none outside the cache's group; otherwise
/// it is ignored with one warning.

#include "kiln/cache/config.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cache {

/// One setting the file can hold.
struct Setting {
    std::string name;                 ///< e.g. "max-size"
    std::string variable;             ///< the variable that overrides it: "KILN_CACHE_MAX_SIZE"
    std::string description;          ///< what it means, for `kiln cache config`
    std::optional<std::string> value; ///< as the file gives it; nullopt when not set there
};

/// Where a cache directory keeps its settings.
/// @param dir the cache directory.
/// @return `<dir>/kiln.conf`.
std::filesystem::path settings_path(const std::filesystem::path& dir);

/// Every known setting, with its value in the settings file of @p config's directory.
/// @param config the cache; only Config::dir and Config::shared are used.
/// @return the settings in a fixed order, each with its value in the file, if any.
/// @throws kiln::ConfigError naming the file when a value does not parse, a key is unknown or a
/// line is no `key = value`, or when the file exists but cannot be read or is not to be trusted.
std::vector<Setting> read_settings(const Config& config);

/// Set @p name to @p value in the settings file of @p config's directory, which is created when
/// missing; the file is replaced atomically (0600, or 0660 when Config::shared). Lines that
/// are errors (unknown keys, no `=`) are dropped, so this is also how a broken file is fixed.
/// @param config the cache; Config::readonly refuses the write.
/// @param name the setting's name, e.g. `"max-size"`.
/// @param value its new value, checked as the variable's value would be.
/// @throws kiln::ConfigError for an unknown @p name or a @p value that does not parse;
/// kiln::Error when the cache is read-only or the file cannot be written.
void write_setting(const Config& config, const std::string& name, const std::string& value);

/// Config::from_environment() without the settings file: what `kiln cache config` starts from,
/// so that a file with a bad value can still be fixed. @throws kiln::ConfigError as
/// Config::from_environment() does for the variables.
/// @return the configuration from the environment and the defaults alone.
Config config_without_settings();

} // namespace kiln::cache
