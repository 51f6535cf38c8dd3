#include "kiln/cache/config.hpp"

#include "kiln/cache/settings.hpp"
#include "kiln/env.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include "local/settings_file.hpp"

#include <pwd.h>
#include <unistd.h>

#include <system_error>
#include <vector>

namespace kiln::cache {

namespace {

std::optional<std::filesystem::path> home_dir() {
    if (auto home = env::get("HOME")) return std::filesystem::path(*home);
    std::vector<char> buffer(16384);
    passwd entry;
    passwd* found = nullptr;
    if (::getpwuid_r(::getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
        found->pw_dir && *found->pw_dir)
        return std::filesystem::path(found->pw_dir);
    return std::nullopt;
}

// Absolute, so saved source paths (NVRTC program names) stay valid from any working directory.
std::filesystem::path absolute_path(const std::filesystem::path& path) {
    std::error_code ec;
    auto result = std::filesystem::absolute(path, ec);
    return (ec ? path : result).lexically_normal();
}

} // namespace

Config Config::from_environment() {
    Config config = config_without_settings();
    // A disabled cache touches no disk, its settings file included; nor does a remote-only one.
    const bool remote_only = config.remote && config.remote->mode == RemoteMode::remote_only;
    if (!config.disabled && !remote_only) detail::apply_settings(config);
    return config;
}

Config config_without_settings() {
    Config config;
    config.save_source = settings::flag(Variable::cache_save_source);
    config.max_size = settings::size(Variable::cache_max_size);
    config.compile_wait = settings::duration(Variable::compile_wait);
    config.disabled = settings::flag(Variable::cache_disable);
    config.readonly = settings::flag(Variable::cache_readonly);
    config.shared = settings::flag(Variable::cache_shared);
    config.read_ahead = settings::flag(Variable::read_ahead);
    // Read (and checked) even when the cache is disabled; a disabled cache does not use it.
    config.remote = RemoteConfig::from_environment();
    try {
        if (auto file = settings::text(Variable::signing_key_file); !file.empty())
            config.signing_key = std::make_shared<const SigningKey>(SigningKey::load(file));
    } catch (const ConfigError& e) {
        throw ConfigError(std::string("KILN_SIGNING_KEY_FILE: ") + e.what());
    }
    try {
        if (auto file = settings::text(Variable::trusted_keys); !file.empty())
            config.trusted_keys = std::make_shared<const TrustedKeys>(TrustedKeys::load(file));
    } catch (const ConfigError& e) {
        throw ConfigError(std::string("KILN_TRUSTED_KEYS: ") + e.what());
    }
    if (auto dir = settings::text(Variable::cache_dir); !dir.empty()) {
        config.dir = absolute_path(dir);
    } else if (auto xdg = env::get("XDG_CACHE_HOME"); xdg && xdg->front() == '/') {
        // The XDG spec says to ignore a relative XDG_CACHE_HOME.
        config.dir = absolute_path(std::filesystem::path(*xdg) / "kiln");
    } else if (auto home = home_dir()) {
        config.dir = absolute_path(*home / ".cache" / "kiln");
    } else if (!config.remote || config.remote->mode != RemoteMode::remote_only) {
        config.disabled = true; // nowhere to put a cache: memory only
    }
    return config;
}

} // namespace kiln::cache
