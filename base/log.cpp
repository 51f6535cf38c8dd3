#include "kiln/log.hpp"

#include "kiln/env.hpp"
#include "kiln/error.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace kiln {

spdlog::logger& logger() {
    static std::shared_ptr<spdlog::logger> instance = [] {
        auto existing = spdlog::get("kiln");
        if (existing) return existing; // a host program registered its own "kiln" logger
        // Parsed before the logger is registered: a bad level then fails every call, not only
        // the first (a second call would find the registered logger and succeed quietly).
        auto level_name = env::get("KILN_LOG_LEVEL").value_or("warn");
        auto level = spdlog::level::from_str(level_name);
        // from_str maps unknown names to "off"; only accept "off" when it was asked for.
        if (level == spdlog::level::off && level_name != "off")
            throw ConfigError("KILN_LOG_LEVEL='" + level_name +
                              "' is not a level: use trace, debug, info, warn, error, critical "
                              "or off");
        auto created = spdlog::stderr_color_mt("kiln");
        created->set_pattern("[kiln] [%l] %v");
        created->set_level(level);
        return created;
    }();
    return *instance;
}

} // namespace kiln
