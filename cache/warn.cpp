// The cache's two log calls (warn.hpp), out of line: spdlog is parsed here only.

#include "warn.hpp"

#include "kiln/log.hpp"

namespace kiln::cache::detail {

void warn(const std::string& message) noexcept {
    try {
        logger().warn("{}", message);
    } catch (...) {
        // A broken logger (e.g. a bad KILN_LOG_LEVEL) must not turn a cache problem into an error.
    }
}

void log_info(const std::string& message) noexcept {
    try {
        logger().info("{}", message);
    } catch (...) {
    }
}

} // namespace kiln::cache::detail
