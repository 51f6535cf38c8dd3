#include "compile_trace.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/settings.hpp"
#include "log_line.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <system_error>
#include <vector>

namespace kiln::detail {

namespace {

// The whole regular file at @p path, never through a link; nullopt if there is none.
std::optional<std::string> read_regular_file(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    std::optional<std::string> content;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        content.emplace();
        char buffer[64 << 10];
        for (;;) {
            const ssize_t n = ::read(fd, buffer, sizeof buffer);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) content.reset();
            if (n <= 0) break;
            content->append(buffer, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return content;
}

std::string temporary_directory() {
    const char* dir = std::getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

} // namespace

bool compile_time_trace_enabled() {
    return settings::flag(Variable::compile_time_trace);
}

TimeTrace::TimeTrace(const cache::Key& key) noexcept
    : m_key(key) {
    try {
        std::string name = temporary_directory() + "/kiln-time-trace-XXXXXX";
        std::vector<char> path(name.begin(), name.end());
        path.push_back('\0');
        if (!::mkdtemp(path.data())) {
            kiln::detail::log_warn(
                "cannot make a directory for NVRTC's time trace ({}: {}); compiling "
                "without a trace",
                name, std::strerror(errno));
            return;
        }
        m_dir = path.data();
        m_option = "--fdevice-time-trace=" + (m_dir / key.hex()).string();
    } catch (...) {
        // Out of memory for a path: no trace.
        m_option.clear();
    }
}

TimeTrace::~TimeTrace() {
    if (m_dir.empty() || m_keep) return;
    try {
        std::error_code error;
        std::filesystem::remove_all(m_dir, error);
    } catch (...) {
        // Destructors never throw; a leftover private directory harms no one.
    }
}

std::filesystem::path TimeTrace::publish(cache::Store* store, const std::string& program) noexcept {
    if (m_option.empty()) return {};
    try {
        const std::filesystem::path base = m_dir / m_key.hex();
        std::filesystem::path json_path = base;
        json_path += ".json";
        // NVRTC appends ".json" to the name it is given; be ready for one that does not.
        std::filesystem::path written = json_path;
        std::optional<std::string> json = read_regular_file(json_path);
        if (!json) {
            written = base;
            json = read_regular_file(base);
        }
        if (!json) return {};
        if (store) {
            if (auto published = store->local().save_time_trace(m_key, *json)) {
                kiln::detail::log_info("NVRTC time trace of {}: {}", program, published->string());
                return *published;
            }
        }
        std::error_code error;
        if (written != json_path) std::filesystem::rename(written, json_path, error);
        if (error) json_path = written;
        m_keep = true;
        kiln::detail::log_warn("NVRTC time trace of {} is in {} (the cache could not take it)",
                               program, json_path.string());
        return json_path;
    } catch (...) {
        // Out of memory, or logging failed: the trace is lost, the compile is not.
        return {};
    }
}

} // namespace kiln::detail
