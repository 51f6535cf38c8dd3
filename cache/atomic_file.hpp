#pragma once
// Publishing a file atomically: write a uniquely named temporary beside the target, then
// rename() it over the target, so readers see the old file, no file, or the whole new one.

#include "fs.hpp"

#include <sys/types.h>

#include <filesystem>
#include <string_view>

namespace kiln::cache::detail {

class AtomicFile {
  public:
    /// Open a fresh temporary in @p target's directory (O_CREAT|O_EXCL|O_NOFOLLOW, so nothing
    /// planted there is followed or reused). With @p force_mode it is fchmod-ed to @p mode, past
    /// the umask. Check error().
    AtomicFile(std::filesystem::path target, mode_t mode, bool force_mode);
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
    std::filesystem::path m_target;
    std::filesystem::path m_temp;
    UniqueFd m_fd;
    int m_error = 0;
    bool m_committed = false;
};

/// Publish @p bytes at @p target, a file named by its content's key, through an AtomicFile.
/// 0 on success, also when the rename failed but the target exists (another writer published
/// the same content first), else an errno.
int write_atomically(const std::filesystem::path& target, std::string_view bytes, mode_t mode,
                     bool force_mode);

} // namespace kiln::cache::detail
