#pragma once
// Thin POSIX helpers for the store: an owning file descriptor, whole reads and writes that
// report errno instead of throwing, directory creation with a chosen mode, directory listing.

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache::detail {

/// Owns one file descriptor; closes it on destruction.
class UniqueFd {
  public:
    UniqueFd() = default;
    explicit UniqueFd(int fd)
        : m_fd(fd) {}
    UniqueFd(UniqueFd&& other) noexcept
        : m_fd(std::exchange(other.m_fd, -1)) {}
    UniqueFd& operator=(UniqueFd&& other) noexcept;
    ~UniqueFd();
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;

    int get() const noexcept { return m_fd; }
    explicit operator bool() const noexcept { return m_fd >= 0; }
    /// Close now and return 0 or the errno of close() (NFS reports write errors there).
    int close() noexcept;

  private:
    int m_fd = -1;
};

/// How the store opens files it reads: a link planted in the cache is not followed, and a FIFO
/// planted there cannot block the open (regular files ignore O_NONBLOCK).
inline constexpr int kReadFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/// open(2), retried on EINTR. On failure the result is empty and errno is set.
UniqueFd open_file(const std::filesystem::path& path, int flags, mode_t mode = 0);
/// openat(2) relative to @p dir_fd, retried on EINTR. On failure empty, errno set.
UniqueFd open_at(int dir_fd, const std::string& name, int flags, mode_t mode = 0);
/// How the store opens a directory it works in: never through a link, never a non-directory.
inline constexpr int kDirFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/// Read all of @p fd from its start into @p out. 0, an errno, or EFBIG when over @p max_size.
/// @p st, when given, receives the fstat(2) it made.
int read_all(int fd, std::uint64_t max_size, std::string& out, struct stat* st = nullptr);
/// read_all() into @p buffer of @p capacity bytes: 0 with @p size set, an errno (EINVAL when not
/// a regular file), or ENOBUFS when the file does not fit (then @p fd is back at its start, so
/// read_all() can take over). @p st, when given, receives the fstat(2) it made.
int read_all_into(int fd, char* buffer, std::size_t capacity, std::size_t& size,
                  struct stat* st = nullptr);
/// Read exactly @p size bytes at @p offset. 0, an errno, or EIO on a short read.
int read_at(int fd, std::uint64_t offset, std::size_t size, std::string& out);
/// Write all of @p bytes. 0 or an errno.
int write_all(int fd, std::string_view bytes);

/// One name in a directory, with lstat's answer.
struct DirItem {
    std::string name;
    std::uint64_t size = 0;
    std::int64_t mtime_ns = 0;
    bool is_dir = false;
};

/// Everything in the directory @p dir_fd (which stays open and unmoved). 0 or an errno.
int list_dir(int dir_fd, std::vector<DirItem>& out);

/// Remove @p name in @p dir_fd, whatever it is: a file, a link (not what it points to), or a
/// directory tree (walked with O_NOFOLLOW, at most a few levels deep). 0 or an errno.
int remove_at(int dir_fd, const std::string& name);

/// Nanoseconds since the epoch, as file times are kept.
std::int64_t now_ns();

/// Whether a file's modification time is within a minute of now (either way): a hit refreshes
/// it only when not, since eviction needs no finer order and an inode write costs a journal
/// transaction.
bool touched_lately(const struct stat& st);

/// Ignore SIGXFSZ if it still has its default action (which kills the process), so a file-size
/// limit turns into EFBIG and a cache miss. Done once per process, before the first write.
void ignore_sigxfsz_once();

} // namespace kiln::cache::detail
