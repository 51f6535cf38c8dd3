// Reading a file the user named (source_file.hpp).

#include "source_file.hpp"

#include "kiln/error.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln::tools {

namespace {

class Fd {
  public:
    explicit Fd(int fd)
        : m_fd(fd) {}
    ~Fd() {
        if (m_fd >= 0) ::close(m_fd);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return m_fd; }

  private:
    int m_fd;
};

[[noreturn]] void cannot_read(const std::filesystem::path& path, const std::string& what,
                              int error) {
    const std::string why = error == ENOENT   ? "no such file"
                            : error == EISDIR ? "a directory"
                            : error == EACCES ? "permission denied"
                                              : std::strerror(error);
    const std::string hint = error == ENOENT   ? "check the path"
                             : error == EISDIR ? "name a file"
                             : error == EACCES ? "check its permissions"
                                               : "check the file";
    throw ArgumentError("cannot read " + what + " '" + path.string() + "' (" + why + "): " + hint);
}

} // namespace

std::string read_user_file(const std::filesystem::path& path, const std::string& what,
                           std::uint64_t max_bytes) {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) cannot_read(path, what, errno);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) cannot_read(path, what, errno);
    if (S_ISDIR(st.st_mode)) cannot_read(path, what, EISDIR);
    std::string bytes;
    char buffer[65536];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) cannot_read(path, what, errno);
        if (n == 0) return bytes;
        // Counted as read, never from a reported size: /dev/zero and pipes report none.
        if (bytes.size() + static_cast<std::size_t>(n) > max_bytes)
            throw ArgumentError(what + " '" + path.string() + "' is larger than " +
                                std::to_string((max_bytes + (1 << 20) - 1) >> 20) +
                                " MiB (the most Kiln reads for it); is it the file you meant?");
        bytes.append(buffer, static_cast<std::size_t>(n));
    }
}

} // namespace kiln::tools
