#include "kiln/log.hpp"

#include "log_line.hpp"

#include "kiln/settings.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace kiln {

spdlog::logger& logger() {
    static std::shared_ptr<spdlog::logger> instance = [] {
        auto existing = spdlog::get("kiln");
        if (existing) return existing; // a host program registered its own "kiln" logger
        // Parsed before the logger is registered: a bad level then fails every call, not only
        // the first (a second call would find the registered logger and succeed quietly).
        // The table's choices are the names from_str knows (it maps any other name to off).
        const auto level = spdlog::level::from_str(settings::text(Variable::log_level));
        auto created = spdlog::stderr_color_mt("kiln");
        created->set_pattern("[kiln] [%l] %v");
        created->set_level(level);
        return created;
    }();
    return *instance;
}

namespace detail {

namespace {

spdlog::level::level_enum level_of(LogLevel level) {
    switch (level) {
    case LogLevel::debug:
        return spdlog::level::debug;
    case LogLevel::info:
        return spdlog::level::info;
    case LogLevel::warn:
        return spdlog::level::warn;
    case LogLevel::error:
        break;
    }
    return spdlog::level::err;
}

} // namespace

bool log_enabled(LogLevel level) {
    return logger().should_log(level_of(level));
}

void log_line(LogLevel level, const std::string& line) {
    logger().log(level_of(level), "{}", line);
}

} // namespace detail

} // namespace kiln
