// The claim file of a key (claim_file.hpp): taken with a non-blocking flock(), released by
// unlinking the file before the lock drops, and removed by maintenance once no process holds it.

#include "claim_file.hpp"

#include "layout.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace kiln::cache::detail {

namespace {

// What a claim file must be to be locked: see the header. Its bytes are never read or written,
// so a planted file can at worst hold its lock, which a waiter's bounded wait covers.
bool acceptable(const struct stat& st, const struct stat& shard, const Modes& modes) {
    if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || (st.st_mode & S_IWOTH)) return false;
    if (st.st_uid == ::geteuid()) return true;
    return modes.shared && st.st_gid == shard.st_gid;
}

bool same_file(const struct stat& a, const struct stat& b) {
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

} // namespace

ClaimFile& ClaimFile::operator=(ClaimFile&& other) noexcept {
    if (this != &other) {
        release();
        m_shard = std::move(other.m_shard);
        m_fd = std::move(other.m_fd);
        m_name = std::move(other.m_name);
    }
    return *this;
}

ClaimFile::Outcome ClaimFile::try_take(int shard_fd, const Key& key, const Modes& modes,
                                       ClaimFile& out) {
    const std::string name = key.hex() + std::string(kClaimSuffix);
    struct stat shard {};
    if (::fstat(shard_fd, &shard) != 0) return Outcome::unusable;
    bool replaced = false;
    // Another round only after replacing what was at the name, or when the file opened had been
    // unlinked by its previous holder (then the name holds a new claim, or none).
    for (int round = 0; round < 8; ++round) {
        // O_NONBLOCK: a FIFO planted at the name cannot block the open.
        UniqueFd fd =
            open_at(shard_fd, name, O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK, modes.file);
        struct stat st {};
        const bool opened = fd && ::fstat(fd.get(), &st) == 0;
        // Unlinked between the open and the fstat by a holder letting go, or no longer the file
        // at the name: another process's fresh claim may be there now, which must not be removed.
        struct stat now {};
        if (opened && S_ISREG(st.st_mode) &&
            (st.st_nlink == 0 ||
             ::fstatat(shard_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
             !same_file(now, st)))
            continue;
        const bool ok = opened && acceptable(st, shard, modes);
        if (!ok) {
            const int error = fd ? EPERM : errno;
            // A link, directory, FIFO, device, hard link or stranger's file: replaced once.
            if (replaced || (error != EPERM && error != ELOOP && error != EISDIR &&
                             error != ENXIO && error != EACCES))
                return Outcome::unusable;
            fd = UniqueFd();
            if (remove_at(shard_fd, name) != 0) return Outcome::unusable;
            replaced = true;
            continue;
        }
        // A group member must be able to open a shared cache's claim past this user's umask.
        if (st.st_uid == ::geteuid() && (st.st_mode & 07777) != modes.file)
            ::fchmod(fd.get(), modes.file);
        if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0)
            return errno == EWOULDBLOCK || errno == EINTR ? Outcome::busy : Outcome::unusable;
        // Locked. The previous holder unlinks the file before it lets go: a lock on a file no
        // longer at the name claims nothing.
        if (::fstatat(shard_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 ||
            !same_file(now, st))
            continue;
        out = ClaimFile();
        out.m_shard = UniqueFd(::fcntl(shard_fd, F_DUPFD_CLOEXEC, 0));
        if (!out.m_shard) return Outcome::unusable; // the lock drops with fd
        out.m_fd = std::move(fd);
        out.m_name = name;
        return Outcome::held;
    }
    return Outcome::unusable;
}

void ClaimFile::release() noexcept {
    if (!m_fd) return;
    // Only the file this process locked: a name that now holds another file is not ours.
    struct stat mine {
    }, now{};
    if (::fstat(m_fd.get(), &mine) == 0 &&
        ::fstatat(m_shard.get(), m_name.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 &&
        same_file(mine, now))
        ::unlinkat(m_shard.get(), m_name.c_str(), 0);
    m_fd.close();
    m_shard.close();
}

bool is_claim_name(std::string_view name) {
    return key_from_name(name, kClaimSuffix).has_value();
}

bool remove_claim_if_stale(int shard_fd, const std::string& name) {
    UniqueFd fd = open_at(shard_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
        return remove_at(shard_fd, name) == 0; // not a claim file: planted, or damage
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false; // a live holder's
    struct stat now {};
    if (::fstatat(shard_fd, name.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 || !same_file(now, st))
        return false; // replaced meanwhile: left to its holder
    return ::unlinkat(shard_fd, name.c_str(), 0) == 0;
}

} // namespace kiln::cache::detail
