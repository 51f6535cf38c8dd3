#include "settings_file.hpp"

#include "kiln/cache/settings.hpp"
#include "kiln/env.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include "warn.hpp"

#include "atomic_file.hpp"
#include "cache_dir.hpp"
#include "fs.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace kiln::cache {

namespace {

constexpr std::uint64_t kMaxSettingsSize = std::uint64_t{64} * 1024;

struct Known {
    const char* name;
    const char* variable;
    const char* description;
};

constexpr Known kKnown[] = {
    {"max-size", "KILN_CACHE_MAX_SIZE",
     "bytes of entries and sources together, e.g. 5G; 0 means no limit (default 2G)"},
};

const Known* find_known(const std::string& name) {
    for (const auto& known : kKnown)
        if (name == known.name) return &known;
    return nullptr;
}

std::string known_names() {
    std::string names;
    for (const auto& known : kKnown)
        names += (names.empty() ? "" : ", ") + std::string(known.name);
    return names;
}

// Throws ConfigError naming @p where when @p value is no value for @p name.
void check_value(const std::string& name, const std::string& value, const std::string& where) {
    try {
        if (name == "max-size") env::parse_size(value, where + name);
    } catch (const ConfigError& e) {
        throw ConfigError(std::string(e.what()) + "; set it with `kiln cache config " + name +
                          " VALUE`");
    }
}

std::string trim(const std::string& text) {
    const auto begin = text.find_first_not_of(" \t\r");
    if (begin == std::string::npos) return {};
    return text.substr(begin, text.find_last_not_of(" \t\r") + 1 - begin);
}

// The file's lines as name and value; a line that is blank or a comment has an empty name and
// itself as value, so a rewrite keeps it.
std::vector<std::pair<std::string, std::string>> split_lines(const std::string& text,
                                                             const std::filesystem::path& path) {
    std::vector<std::pair<std::string, std::string>> lines;
    std::size_t start = 0, number = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        ++number;
        const std::string content = trim(line);
        if (content.empty() || content[0] == '#') {
            lines.emplace_back("", line);
            continue;
        }
        const auto equals = content.find('=');
        if (equals == std::string::npos)
            throw ConfigError(path.string() + ":" + std::to_string(number) + ": '" + content +
                              "' is not a `key = value` line; fix or remove it");
        lines.emplace_back(trim(content.substr(0, equals)), trim(content.substr(equals + 1)));
    }
    return lines;
}

// The text of the file, or "" with @p distrust set when it is not to be used. Opened through
// the checked cache directory and never through a link, as the store opens its files.
std::string read_trusted(const Config& config, std::string& distrust, uid_t* owner = nullptr) {
    const auto root = detail::open_root(config.dir, detail::modes_for(config.shared), false);
    // A missing cache directory has nothing set yet; one that cannot be used (not a directory,
    // not to be trusted) is not read either, and the store, or `kiln cache`, says why.
    if (!root.fd) return {};
    detail::UniqueFd fd =
        detail::open_at(root.fd.get(), std::string(detail::kSettingsName), detail::kReadFlags);
    if (!fd) {
        if (errno != ENOENT)
            distrust = errno == ELOOP
                           ? "it is a symbolic link"
                           : std::string("it cannot be read (") + std::strerror(errno) + ")";
        return {};
    }
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) {
        distrust = std::string("it cannot be read (") + std::strerror(errno) + ")";
        return {};
    }
    if (!S_ISREG(st.st_mode))
        distrust = "it is not a regular file";
    else if (st.st_mode & S_IWOTH)
        distrust = "it is writable by every user";
    else if (!config.shared && st.st_uid != ::geteuid())
        distrust = "it is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
                   std::to_string(::geteuid()) + ")";
    if (!distrust.empty()) return {};
    if (owner) *owner = st.st_uid;
    std::string text;
    if (int error = detail::read_all(fd.get(), kMaxSettingsSize, text)) {
        distrust = error == EFBIG ? "it is larger than a settings file can be"
                                  : std::string("it cannot be read (") + std::strerror(error) + ")";
        return {};
    }
    return text;
}

} // namespace

std::filesystem::path settings_path(const std::filesystem::path& dir) {
    return dir / std::string(detail::kSettingsName);
}

namespace detail {

SettingsFile read_settings_file(const Config& config) {
    SettingsFile file;
    uid_t owner = ::geteuid();
    const std::string text = read_trusted(config, file.distrust, &owner);
    file.own = owner == ::geteuid();
    const auto path = settings_path(config.dir);
    for (auto& [name, value] : split_lines(text, path)) {
        if (name.empty()) continue;
        if (!find_known(name))
            throw ConfigError(path.string() + ": unknown setting '" + name +
                              "' (known: " + known_names() +
                              "); remove that line, or set what you meant with "
                              "`kiln cache config KEY VALUE`");
        check_value(name, value, path.string() + ": ");
        file.values.emplace_back(std::move(name), std::move(value));
    }
    return file;
}

void apply_settings(Config& config) {
    SettingsFile file;
    try {
        file = read_settings_file(config);
    } catch (const ConfigError& e) {
        // Another member's mistake in a team cache must not stop every member's compiles: their
        // own file is theirs to fix (the error says how), another's is warned about and skipped.
        uid_t owner = ::geteuid();
        std::string distrust;
        (void)read_trusted(config, distrust, &owner);
        if (owner == ::geteuid()) throw;
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            warn(std::string(e.what()) + ". The file was written by uid " + std::to_string(owner) +
                 ", not by you: its settings are ignored and the defaults used; `kiln cache "
                 "config KEY VALUE` rewrites it.");
        return;
    }
    if (!file.distrust.empty()) {
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            warn("the cache settings file " + settings_path(config.dir).string() + " is ignored: " +
                 file.distrust + ". Remove it, then set what you need with `kiln cache config`.");
        return;
    }
    for (const auto& [name, value] : file.values)
        if (name == "max-size" && !settings::raw(Variable::cache_max_size))
            config.max_size = env::parse_size(value, name);
}

} // namespace detail

std::vector<Setting> read_settings(const Config& config) {
    const detail::SettingsFile file = detail::read_settings_file(config);
    if (!file.distrust.empty())
        throw ConfigError("the cache settings file " + settings_path(config.dir).string() +
                          " is not used: " + file.distrust +
                          ". Remove it, then set what you need with `kiln cache config`.");
    std::vector<Setting> settings;
    for (const auto& known : kKnown) {
        Setting setting{known.name, known.variable, known.description, std::nullopt};
        for (const auto& [name, value] : file.values)
            if (name == known.name) setting.value = value; // the last one counts
        settings.push_back(std::move(setting));
    }
    return settings;
}

void write_setting(const Config& config, const std::string& name, const std::string& value) {
    if (!find_known(name))
        throw ConfigError("unknown setting '" + name + "' (known: " + known_names() + ")");
    check_value(name, value, "");
    if (config.readonly)
        throw Error("the kernel cache is read-only (KILN_CACHE_READONLY=1): its settings are not "
                    "changed; unset KILN_CACHE_READONLY to change them");
    const auto path = settings_path(config.dir);
    const detail::Modes modes = detail::modes_for(config.shared);
    auto root = detail::open_root(config.dir, modes, true);
    if (!root.fd)
        throw Error("cannot write " + path.string() + ": the cache directory " +
                    (root.distrust.empty() ? std::string(std::strerror(root.error))
                                           : "is not used: " + root.distrust) +
                    "; fix it or set KILN_CACHE_DIR to a directory of your own");
    // Other settings and comments are kept, but only from a file this user may trust: a planted
    // file's values must not become this user's settings. Lines that are errors (no `=`, an
    // unknown key) are dropped, so that setting a value is also how a broken file is fixed.
    std::string distrust;
    const std::string old_text = read_trusted(config, distrust);
    std::vector<std::pair<std::string, std::string>> lines;
    try {
        lines = split_lines(old_text, path);
    } catch (const ConfigError&) {
        lines.clear(); // a line that is no setting at all: the file is written afresh
    }
    std::string text;
    bool written = false;
    for (const auto& [line_name, line_value] : lines) {
        if (line_name.empty()) {
            text += line_value + "\n";
        } else if (!find_known(line_name)) {
            continue;
        } else if (line_name != name) {
            text += line_name + " = " + line_value + "\n";
        } else if (!written) {
            text += name + " = " + value + "\n";
            written = true;
        }
    }
    if (!written) text += name + " = " + value + "\n";
    // AtomicFile rather than write_atomically(): that one takes an existing target for success,
    // which is right for a file named by its content, not for this one.
    detail::AtomicFile file(root.fd.get(), std::string(detail::kSettingsName), modes.file, true);
    file.write(text);
    if (int error = file.commit())
        throw Error("cannot write " + path.string() + " (" + std::strerror(error) +
                    "); check the cache directory's permissions");
}

} // namespace kiln::cache
