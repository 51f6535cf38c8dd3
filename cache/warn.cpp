// The cache's two log calls (warn.hpp), out of line: spdlog is parsed here only.

#include "warn.hpp"

#include "log_line.hpp"

namespace kiln::cache::detail {

void warn(const std::string& message) noexcept {
    try {
        kiln::detail::log_warn("{}", message);
    } catch (...) {
        // A broken logger (e.g. a bad KILN_LOG_LEVEL) must not turn a cache problem into an error.
    }
}

void log_info(const std::string& message) noexcept {
    try {
        kiln::detail::log_info("{}", message);
    } catch (...) {
    }
}

} // namespace kiln::cache::detail
