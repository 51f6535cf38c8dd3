#include "fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <ctime>
#include <mutex>

namespace kiln::cache::detail {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
    if (this != &other) {
        close();
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

UniqueFd::~UniqueFd() {
    close();
}

int UniqueFd::close() noexcept {
    if (m_fd < 0) return 0;
    // No retry on EINTR: Linux has closed the descriptor either way.
    const int result = ::close(std::exchange(m_fd, -1));
    return result == 0 ? 0 : errno;
}

UniqueFd open_file(const std::filesystem::path& path, int flags, mode_t mode) {
    int fd;
    do {
        fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    return UniqueFd(fd);
}

UniqueFd open_at(int dir_fd, const std::string& name, int flags, mode_t mode) {
    int fd;
    do {
        fd = ::openat(dir_fd, name.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    return UniqueFd(fd);
}

namespace {

// Reads from fd's offset into buffer[filled, capacity) until the end of the file or a full buffer
// (true: the end). `expected` is the size fstat gave: a read that reaches it is the end (a regular
// file reads short only there), so no second read is made to see it. 0 or an errno.
int read_to_end(int fd, char* buffer, std::size_t capacity, std::size_t expected,
                std::size_t& filled, bool& ended) {
    ended = false;
    while (filled < capacity) {
        const ssize_t n = ::read(fd, buffer + filled, capacity - filled);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        filled += static_cast<std::size_t>(n);
        if (n == 0 || filled == expected) {
            ended = true;
            break;
        }
    }
    return 0;
}

// fstat(2) into st (and *st_out): 0 for a regular file, else EINVAL or the errno.
int stat_regular(int fd, struct stat& st, struct stat* st_out) {
    if (::fstat(fd, &st) != 0) return errno;
    if (st_out) *st_out = st;
    return S_ISREG(st.st_mode) ? 0 : EINVAL;
}

} // namespace

int read_all(int fd, std::uint64_t max_size, std::string& out, struct stat* st_out) {
    struct stat st;
    if (const int error = stat_regular(fd, st, st_out)) return error;
    if (static_cast<std::uint64_t>(st.st_size) > max_size) return EFBIG;
    // A byte of room past the size fstat gave; more only if the file grew (it should not).
    const auto expected = static_cast<std::size_t>(st.st_size);
    out.resize(expected + 1);
    std::size_t filled = 0;
    for (bool ended = false; !ended;) {
        if (filled == out.size()) {
            if (out.size() > max_size) return EFBIG;
            out.resize(out.size() * 2);
        }
        if (const int error = read_to_end(fd, out.data(), out.size(), expected, filled, ended))
            return error;
    }
    out.resize(filled);
    return filled > max_size ? EFBIG : 0;
}

int read_all_into(int fd, char* buffer, std::size_t capacity, std::size_t& size,
                  struct stat* st_out) {
    struct stat st;
    if (const int error = stat_regular(fd, st, st_out)) return error;
    // A byte of room past the size fstat gave, to see the end in the same read.
    if (static_cast<std::uint64_t>(st.st_size) >= capacity) return ENOBUFS;
    std::size_t filled = 0;
    bool ended = false;
    if (const int error =
            read_to_end(fd, buffer, capacity, static_cast<std::size_t>(st.st_size), filled, ended))
        return error;
    if (!ended) {
        // It grew past the buffer while being read: start again, in a buffer of its own.
        if (::lseek(fd, 0, SEEK_SET) != 0) return errno;
        return ENOBUFS;
    }
    size = filled;
    return 0;
}

int read_at(int fd, std::uint64_t offset, std::size_t size, std::string& out) {
    out.resize(size);
    std::size_t filled = 0;
    while (filled < size) {
        const ssize_t n =
            ::pread(fd, out.data() + filled, size - filled, static_cast<off_t>(offset + filled));
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        if (n == 0) return EIO;
        filled += static_cast<std::size_t>(n);
    }
    return 0;
}

int write_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

int list_dir(int dir_fd, std::vector<DirItem>& out) {
    // fdopendir takes ownership of its descriptor: give it a duplicate.
    const int own = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return errno;
    DIR* handle = ::fdopendir(own);
    if (!handle) {
        const int error = errno;
        ::close(own);
        return error;
    }
    ::rewinddir(handle);
    while (const dirent* item = ::readdir(handle)) {
        const std::string_view name = item->d_name;
        if (name == "." || name == "..") continue;
        struct stat st;
        // The file may vanish between readdir and fstatat (another process evicted it).
        if (::fstatat(own, item->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        DirItem entry;
        entry.name = std::string(name);
        entry.size = static_cast<std::uint64_t>(st.st_size);
        entry.mtime_ns = std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
        entry.is_dir = S_ISDIR(st.st_mode);
        out.push_back(std::move(entry));
    }
    ::closedir(handle);
    return 0;
}

namespace {

int remove_tree_at(int dir_fd, const std::string& name, int depth) {
    if (::unlinkat(dir_fd, name.c_str(), 0) == 0) return 0;
    if (errno != EISDIR && errno != EPERM) return errno;
    if (depth > 4) return ELOOP; // deeper than anything Kiln or plain damage makes
    UniqueFd sub = open_at(dir_fd, name, kDirFlags);
    if (!sub) return errno;
    std::vector<DirItem> items;
    if (int error = list_dir(sub.get(), items)) return error;
    for (const auto& item : items)
        if (int error = remove_tree_at(sub.get(), item.name, depth + 1)) return error;
    return ::unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) == 0 ? 0 : errno;
}

} // namespace

int remove_at(int dir_fd, const std::string& name) {
    return remove_tree_at(dir_fd, name, 0);
}

std::int64_t now_ns() {
    timespec now;
    ::clock_gettime(CLOCK_REALTIME, &now);
    return std::int64_t{now.tv_sec} * 1000000000 + now.tv_nsec;
}

bool touched_lately(const struct stat& st) {
    const std::time_t now = std::time(nullptr);
    const std::time_t modified = st.st_mtim.tv_sec;
    return modified > now - 60 && modified < now + 60;
}

void ignore_sigxfsz_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction current;
        if (::sigaction(SIGXFSZ, nullptr, &current) != 0) return;
        if ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL) return;
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigemptyset(&ignore.sa_mask);
        ::sigaction(SIGXFSZ, &ignore, nullptr);
    });
}

} // namespace kiln::cache::detail
