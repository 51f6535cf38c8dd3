// The checks before a cache command runs (cache_access.hpp).

#include "cache_access.hpp"

#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <iostream>

namespace kiln::tools {

cache::Config cache_config() {
    cache::Config config = cache::Config::from_environment();
    if (config.dir.empty())
        throw Error("there is no cache directory: neither KILN_CACHE_DIR, XDG_CACHE_HOME nor HOME "
                    "is set; set KILN_CACHE_DIR to one");
    return config;
}

std::vector<cache::DirProblem> check_cache_dir(cache::LocalStore& store, bool print) {
    std::vector<cache::DirProblem> problems = store.check_dir();
    for (const auto& problem : problems) {
        if (!problem.fatal) continue;
        const bool missing = problem.what == std::strerror(ENOENT);
        throw Error("the kernel cache " + problem.path.string() + " cannot be used (" +
                    problem.what + "): " +
                    (missing ? "nothing has been cached there yet, or KILN_CACHE_DIR names "
                               "another directory"
                             : "fix its owner or permissions, or set KILN_CACHE_DIR to a "
                               "directory of your own"));
    }
    for (const auto& problem : problems)
        if (print)
            std::cerr
                << "kiln: " << problem.path.string() << ": " << problem.what
                << " (its entries are left out; `kiln cache verify --fix` heals what it can)\n";
    return problems;
}

nlohmann::json problems_json(const std::vector<cache::DirProblem>& problems) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& problem : problems)
        j.push_back({{"path", problem.path.string()}, {"what", problem.what}});
    return j;
}

void require_writable(const cache::Config& config, const std::string& command) {
    if (config.readonly)
        throw Error("`" + command + "` would change the kernel cache, which is read-only here (" +
                    "KILN_CACHE_READONLY=" + settings::raw(Variable::cache_readonly).value_or("1") +
                    "); unset KILN_CACHE_READONLY to run it");
    if (config.disabled)
        throw Error("`" + command + "` would change the kernel cache, which is turned off here (" +
                    "KILN_CACHE_DISABLE=" + settings::raw(Variable::cache_disable).value_or("1") +
                    "); unset KILN_CACHE_DISABLE to run it");
}

cache::Key resolve_key(cache::LocalStore& store, std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (auto key = cache::Key::from_hex(text)) return *key;
    const bool hex =
        !text.empty() && text.size() < 32 &&
        std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c); });
    if (!hex)
        throw ArgumentError("'" + text +
                            "' is not a cache key: expected hex digits, all 32 or the first few "
                            "(see `kiln cache ls`)");
    check_cache_dir(store);
    std::vector<cache::Key> matches;
    for (const auto& info : store.list())
        if (info.key.hex().compare(0, text.size(), text) == 0) matches.push_back(info.key);
    if (matches.empty())
        throw Error("no entry's key starts with " + text + " in " + store.config().dir.string() +
                    " (see `kiln cache ls`)");
    if (matches.size() > 1) {
        std::sort(matches.begin(), matches.end());
        throw ArgumentError("'" + text + "' is the start of " + std::to_string(matches.size()) +
                            " keys (" + matches[0].hex() + ", " + matches[1].hex() +
                            (matches.size() > 2 ? ", ..." : "") + "): give more digits");
    }
    return matches.front();
}

} // namespace kiln::tools
