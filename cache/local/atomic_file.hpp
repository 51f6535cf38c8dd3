#pragma once
// Publishing a file atomically: write a uniquely named temporary beside the target, then
// rename() it over the target, so readers see the old file, no file, or the whole new one.

#include "fs.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

class AtomicFile {
  public:
    /// Open a fresh temporary for @p name in the directory @p dir_fd (borrowed: it must outlive
    /// this object), O_CREAT|O_EXCL|O_NOFOLLOW with an unpredictable name, so nothing planted
    /// there is followed or reused. With @p force_mode it is fchmod-ed to @p mode, past the
    /// umask. Check error().
    AtomicFile(int dir_fd, std::string name, mode_t mode, bool force_mode);
    /// The same for a file the user named (an export archive): its directory is opened first.
    AtomicFile(const std::filesystem::path& target, mode_t mode, bool force_mode);
    /// Removes the temporary unless commit() published it.
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    /// 0 while all is well, else the errno of the first failure.
    int error() const noexcept { return m_error; }
    /// Append bytes. 0 or an errno.
    int write(std::string_view bytes);
    /// Close and rename over the target. 0 or an errno.
    int commit();

  private:
    void open_temp(mode_t mode, bool force_mode);

    UniqueFd m_own_dir; // set when this object opened the directory itself
    int m_dir = -1;
    std::string m_name;
    std::string m_temp;
    UniqueFd m_fd;
    int m_error = 0;
    bool m_committed = false;
};

/// Publish @p bytes as @p name in @p dir_fd, a file named by its content's key, through an
/// AtomicFile. 0 on success, also when the rename failed but the target exists (another writer
/// published the same content first), else an errno.
int write_atomically(int dir_fd, const std::string& name, std::string_view bytes, mode_t mode,
                     bool force_mode);

} // namespace kiln::cache::detail
