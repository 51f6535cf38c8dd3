#include "atomic_file.hpp"

#include "layout.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>

namespace kiln::cache::detail {

namespace {

// The pid keeps names apart across processes (also forked ones, which inherit the generator);
// the random part keeps them apart across threads and pid reuse, and makes the name impossible
// to guess ahead. O_EXCL catches the rest.
std::string temp_name(const std::string& target) {
    thread_local std::mt19937_64 generator{std::random_device{}()};
    char suffix[48];
    std::snprintf(suffix, sizeof suffix, ".%ld.%016llx", static_cast<long>(::getpid()),
                  static_cast<unsigned long long>(generator()));
    return std::string(kTempPrefix) + target + suffix;
}

} // namespace

AtomicFile::AtomicFile(int dir_fd, std::string name, mode_t mode, bool force_mode)
    : m_dir(dir_fd)
    , m_name(std::move(name)) {
    open_temp(mode, force_mode);
}

AtomicFile::AtomicFile(const std::filesystem::path& target, mode_t mode, bool force_mode)
    : m_name(target.filename().string()) {
    const auto parent = target.parent_path();
    m_own_dir = open_file(parent.empty() ? "." : parent, O_RDONLY | O_DIRECTORY);
    if (!m_own_dir) {
        m_error = errno;
        return;
    }
    m_dir = m_own_dir.get();
    open_temp(mode, force_mode);
}

void AtomicFile::open_temp(mode_t mode, bool force_mode) {
    for (int attempt = 0; attempt < 4; ++attempt) {
        m_temp = temp_name(m_name);
        m_fd = open_at(m_dir, m_temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
        if (m_fd || errno != EEXIST) break;
    }
    if (!m_fd) {
        m_error = errno;
        m_temp.clear();
        return;
    }
    if (force_mode && ::fchmod(m_fd.get(), mode) != 0) m_error = errno;
}

AtomicFile::~AtomicFile() {
    m_fd.close();
    if (!m_committed && !m_temp.empty()) ::unlinkat(m_dir, m_temp.c_str(), 0);
}

int AtomicFile::write(std::string_view bytes) {
    if (m_error == 0) m_error = write_all(m_fd.get(), bytes);
    return m_error;
}

int AtomicFile::commit() {
    if (m_error != 0) return m_error;
    // No fsync: every read verifies the checksums, so an entry that a power loss leaves empty or
    // partly written is a miss that gets rewritten, and a store stays free of disk flushes.
    // close() is still checked, since NFS reports write errors (EDQUOT, EIO) only there.
    if (int error = m_fd.close()) return m_error = error;
    // rename() replaces a link planted under the target name; it never writes through it.
    if (::renameat(m_dir, m_temp.c_str(), m_dir, m_name.c_str()) == 0) {
        m_committed = true;
        return 0;
    }
    return m_error = errno;
}

int write_atomically(int dir_fd, const std::string& name, std::string_view bytes, mode_t mode,
                     bool force_mode) {
    AtomicFile file(dir_fd, name, mode, force_mode);
    if (file.error() != 0) return file.error();
    if (int error = file.write(bytes)) return error;
    const int error = file.commit();
    // On NFS a rename can fail after the target appeared: then another writer won, and since
    // a cache file's name is its content's key, what it wrote is what we meant to write.
    struct stat st;
    if (error != 0 && ::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
        return 0;
    return error;
}

} // namespace kiln::cache::detail
