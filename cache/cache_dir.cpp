#include "cache_dir.hpp"

#include "layout.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace kiln::cache::detail {

namespace {

std::string user_name(uid_t uid) {
    std::vector<char> buffer(4096);
    passwd entry;
    passwd* found = nullptr;
    if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 && found)
        return std::string(found->pw_name) + " (uid " + std::to_string(uid) + ")";
    return "uid " + std::to_string(uid);
}

} // namespace

Modes modes_for(bool shared) {
    return shared ? Modes{02770, 0660, true} : Modes{0700, 0600, false};
}

std::string distrust(const struct stat& st, const Modes& modes) {
    if (st.st_mode & S_IWOTH) return "it is writable by every user";
    if (modes.shared) return {};
    if (st.st_uid != ::geteuid())
        return "it is owned by " + user_name(st.st_uid) + ", not by you (" +
               user_name(::geteuid()) + ")";
    // A group-writable private cache is only safe when the group is the user's own.
    if ((st.st_mode & S_IWGRP) && st.st_gid != ::getegid())
        return "it is writable by group " + std::to_string(st.st_gid) +
               " (set KILN_CACHE_SHARED=1 for a team cache, or chmod g-w)";
    return {};
}

int make_dir_at(int parent_fd, const std::string& name, const Modes& modes) {
    if (::mkdirat(parent_fd, name.c_str(), modes.dir & 0777) != 0) return errno;
    // Fix the modes on the descriptor of what was just made (never through a name that could
    // have been swapped): the umask may have dropped group bits, and mkdir ignores setgid.
    UniqueFd fd = open_at(parent_fd, name, kDirFlags);
    if (!fd) return errno;
    if (modes.shared) {
        struct stat parent;
        // The group of the directory it is created in, so a team's parent decides the group
        // (possible when this user is a member; otherwise the setgid parent already did it).
        if (::fstat(parent_fd, &parent) == 0)
            ::fchown(fd.get(), static_cast<uid_t>(-1), parent.st_gid);
    }
    if (::fchmod(fd.get(), modes.dir) != 0) return errno;
    return 0;
}

OpenedRoot open_root(const std::filesystem::path& root, const Modes& modes, bool create) {
    OpenedRoot result;
    // The path itself is the user's choice, links included; what it leads to is checked.
    result.fd = open_file(root, O_RDONLY | O_DIRECTORY);
    if (!result.fd && errno == ENOENT && create) {
        UniqueFd parent = open_file("/", O_RDONLY | O_DIRECTORY);
        std::filesystem::path walked = "/";
        for (const auto& part : root.relative_path()) {
            if (!parent) break;
            walked /= part;
            int error = make_dir_at(parent.get(), part.string(), modes);
            if (error != 0 && error != EEXIST) {
                result.error = error;
                return result;
            }
            parent = open_at(parent.get(), part.string(), O_RDONLY | O_DIRECTORY);
        }
        result.fd = open_file(root, O_RDONLY | O_DIRECTORY);
    }
    if (!result.fd) {
        result.error = errno;
        return result;
    }
    struct stat st;
    if (::fstat(result.fd.get(), &st) != 0) {
        result.error = errno;
        result.fd = UniqueFd();
        return result;
    }
    result.distrust = distrust(st, modes);
    if (!result.distrust.empty()) {
        result.error = EPERM;
        result.fd = UniqueFd();
    }
    return result;
}

OpenedShard open_shard(int root_fd, int shard, const Modes& modes, bool create) {
    OpenedShard result;
    const std::string name = shard_name(shard);
    for (int attempt = 0; attempt < 2; ++attempt) {
        result.fd = open_at(root_fd, name, kDirFlags);
        if (result.fd) break;
        const int error = errno;
        result.error = error;
        if (error == ENOENT) {
            if (!create) return result;
            const int made = make_dir_at(root_fd, name, modes);
            if (made != 0 && made != EEXIST) {
                result.error = made;
                return result;
            }
            continue;
        }
        if (error != ELOOP && error != ENOTDIR) return result;
        // A link or a file where the shard should be: damage (or a plant) that heals by removal.
        // (O_DIRECTORY|O_NOFOLLOW reports a link to a directory as ENOTDIR, so look.)
        struct stat st;
        const bool is_link =
            ::fstatat(root_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        result.problem = is_link ? "a symbolic link where a shard directory should be"
                                 : "a file where a shard directory should be";
        if (!create || result.removed || ::unlinkat(root_fd, name.c_str(), 0) != 0) return result;
        result.removed = true;
        const int made = make_dir_at(root_fd, name, modes);
        if (made != 0 && made != EEXIST) {
            result.error = made;
            return result;
        }
    }
    if (!result.fd) return result;
    struct stat st;
    if (::fstat(result.fd.get(), &st) != 0) {
        result.error = errno;
        result.fd = UniqueFd();
        return result;
    }
    const std::string why = distrust(st, modes);
    if (!why.empty()) {
        result.error = EPERM;
        result.problem = "a shard directory that " + why.substr(3); // "it is ..." -> "is ..."
        result.fd = UniqueFd();
        return result;
    }
    result.error = 0;
    if (!result.removed) result.problem.clear();
    return result;
}

} // namespace kiln::cache::detail
