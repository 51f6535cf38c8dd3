#include "compile_trace.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/env.hpp"

#include <system_error>

namespace kiln::detail {

namespace {

std::filesystem::path with_json(const std::filesystem::path& base) {
    std::filesystem::path json = base;
    json += ".json";
    return json;
}

} // namespace

bool compile_time_trace_enabled() {
    return env::get_flag("KILN_COMPILE_TIME_TRACE", false);
}

std::filesystem::path time_trace_base(const cache::Store* store, const cache::Key& key) {
    std::error_code error;
    if (store && !store->config().disabled && !store->config().readonly) {
        std::filesystem::path base = store->source_path(key).replace_extension();
        std::filesystem::create_directories(base.parent_path(), error);
        if (!error) return base;
    }
    error.clear();
    std::filesystem::path dir = std::filesystem::temp_directory_path(error);
    if (error) dir = "/tmp";
    dir /= "kiln-time-trace";
    std::filesystem::create_directories(dir, error);
    return dir / key.hex();
}

std::filesystem::path finish_time_trace(const std::filesystem::path& base) noexcept {
    try {
        const std::filesystem::path json = with_json(base);
        std::error_code error;
        if (std::filesystem::exists(json, error)) return json;
        if (std::filesystem::exists(base, error)) {
            std::filesystem::rename(base, json, error);
            if (!error) return json;
        }
    } catch (...) {
        // Out of memory for a path: report no trace.
    }
    return {};
}

} // namespace kiln::detail
