#include "cache_dir.hpp"

#include "layout.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
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

std::string group_name(gid_t gid) {
    std::vector<char> buffer(4096);
    group entry;
    group* found = nullptr;
    if (::getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) == 0 && found)
        return std::string(found->gr_name) + " (gid " + std::to_string(gid) + ")";
    return "gid " + std::to_string(gid);
}

// Whether this process has @p gid among its groups.
bool caller_in_group(gid_t gid) {
    if (gid == ::getegid()) return true;
    const int count = ::getgroups(0, nullptr);
    if (count <= 0) return false;
    std::vector<gid_t> groups(static_cast<std::size_t>(count));
    const int got = ::getgroups(count, groups.data());
    for (int i = 0; i < got; ++i)
        if (groups[static_cast<std::size_t>(i)] == gid) return true;
    return false;
}

// Whether the user @p uid belongs to the group @p gid, as the user and group databases say
// (primary group, or a listed member). A user the databases do not know belongs to nothing.
bool user_in_group(uid_t uid, gid_t gid) {
    std::vector<char> buffer(16384);
    passwd user;
    passwd* found_user = nullptr;
    if (::getpwuid_r(uid, &user, buffer.data(), buffer.size(), &found_user) != 0 || !found_user)
        return false;
    if (user.pw_gid == gid) return true;
    const std::string name = user.pw_name;
    group entry;
    group* found_group = nullptr;
    if (::getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found_group) != 0 || !found_group)
        return false;
    for (char** member = entry.gr_mem; member && *member; ++member)
        if (name == *member) return true;
    return false;
}

// Whether the group @p gid can hold no one but this user: the user's own primary group, named
// after the user and listing no other member (a user private group). Another primary group, such
// as `users`, lets every member write what is group-writable.
bool group_is_callers_alone(gid_t gid) {
    if (gid != ::getegid()) return false;
    std::vector<char> buffer(16384);
    passwd user;
    passwd* found_user = nullptr;
    if (::getpwuid_r(::geteuid(), &user, buffer.data(), buffer.size(), &found_user) != 0 ||
        !found_user)
        return false;
    const std::string name = user.pw_name;
    std::vector<char> group_buffer(16384);
    group entry;
    group* found_group = nullptr;
    if (::getgrgid_r(gid, &entry, group_buffer.data(), group_buffer.size(), &found_group) != 0 ||
        !found_group || name != entry.gr_name)
        return false;
    for (char** member = entry.gr_mem; member && *member; ++member)
        if (name != *member) return false;
    return true;
}

// Why a shared cache directory with status @p st could have been made or changed by someone
// outside the team, or "": its group must be one of the caller's, it must pass that group on to
// what is made in it (setgid) and give others nothing, and its owner must be the caller, root or
// a member of its group. A stranger can make a directory in a world-writable parent, give it any
// mode and a group of their own, but never a group they are not in.
std::string distrust_shared_root(const struct stat& st) {
    if (!caller_in_group(st.st_gid))
        return "its group " + group_name(st.st_gid) + " is not one of your groups";
    if (!(st.st_mode & S_ISGID))
        return "it does not carry the setgid bit (chmod 2770 makes new entries take its group)";
    if (st.st_mode & S_IRWXO) return "it gives other users access (chmod o-rwx)";
    if (st.st_uid != ::geteuid() && st.st_uid != 0 && !user_in_group(st.st_uid, st.st_gid))
        return "it is owned by " + user_name(st.st_uid) + ", who is not a member of its group " +
               group_name(st.st_gid);
    return {};
}

// Why a symbolic link found in the directory with status @p holder could have been planted by
// another user, or "": only a directory that no one but the caller and root can write is safe.
std::string distrust_link_holder(const struct stat& holder) {
    if (holder.st_uid != ::geteuid() && holder.st_uid != 0)
        return "is owned by " + user_name(holder.st_uid);
    if (holder.st_mode & S_IWOTH) return "is writable by every user";
    // Group write is the caller's alone only in a group of the caller's alone; a team's group
    // lets every member swap the link.
    if ((holder.st_mode & S_IWGRP) && !group_is_callers_alone(holder.st_gid))
        return "is writable by group " + group_name(holder.st_gid);
    return {};
}

// The components of @p path, in order, without empty and "." parts.
void push_components(const std::filesystem::path& path, std::deque<std::string>& todo) {
    std::vector<std::string> parts;
    for (const auto& part : path.relative_path()) {
        const std::string name = part.string();
        if (!name.empty() && name != ".") parts.push_back(name);
    }
    todo.insert(todo.begin(), parts.begin(), parts.end());
}

std::string read_link_at(int dir_fd, const std::string& name) {
    std::vector<char> buffer(PATH_MAX + 1);
    const ssize_t n = ::readlinkat(dir_fd, name.c_str(), buffer.data(), buffer.size());
    if (n <= 0 || static_cast<std::size_t>(n) >= buffer.size()) return {};
    return std::string(buffer.data(), static_cast<std::size_t>(n));
}

// POSIX allows 8 links per resolution at least; Linux follows 40.
constexpr int kMaxLinks = 40;

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
    if ((st.st_mode & S_IWGRP) && !group_is_callers_alone(st.st_gid))
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
        // The group of the directory it is created in, so a team's parent decides the group, when
        // this user is a member (otherwise the setgid parent already did it, or the directory
        // keeps the user's group: one the user could not use as a team cache).
        if (::fstat(parent_fd, &parent) == 0 && caller_in_group(parent.st_gid))
            ::fchown(fd.get(), static_cast<uid_t>(-1), parent.st_gid);
    }
    if (::fchmod(fd.get(), modes.dir) != 0) return errno;
    return 0;
}

OpenedRoot open_root(const std::filesystem::path& root, const Modes& modes, bool create) {
    OpenedRoot result;
    auto refuse = [&](std::string why) {
        result.error = EPERM;
        result.distrust = std::move(why);
        result.fd = UniqueFd();
        return std::move(result);
    };
    auto fail = [&](int error) {
        result.error = error;
        result.fd = UniqueFd();
        return std::move(result);
    };
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(root, ec);
    if (ec) return fail(ec.value());
    // Walk the path one component at a time, never letting the kernel follow a link: a link is
    // followed here only when the directory that holds it could not have been changed by anyone
    // but this user and root, so `~/.cache -> /data/cache` works and a link a team member (or a
    // stranger in /tmp) swapped in for the cache directory, or one of its parents, does not.
    UniqueFd dir = open_file("/", O_RDONLY | O_DIRECTORY);
    if (!dir) return fail(errno);
    std::filesystem::path walked = "/";
    std::deque<std::string> todo;
    push_components(absolute, todo);
    int links = 0;
    while (!todo.empty()) {
        const std::string part = std::move(todo.front());
        todo.pop_front();
        UniqueFd next = open_at(dir.get(), part, kDirFlags);
        if (!next && errno == ENOENT && create) {
            const int made = make_dir_at(dir.get(), part, modes);
            if (made != 0 && made != EEXIST) return fail(made);
            next = open_at(dir.get(), part, kDirFlags);
        }
        if (!next) {
            const int error = errno;
            struct stat link;
            // O_DIRECTORY|O_NOFOLLOW reports a link to a directory as ENOTDIR, so look.
            if ((error != ELOOP && error != ENOTDIR) ||
                ::fstatat(dir.get(), part.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0 ||
                !S_ISLNK(link.st_mode))
                return fail(error);
            struct stat holder;
            if (::fstat(dir.get(), &holder) != 0) return fail(errno);
            if (std::string why = distrust_link_holder(holder); !why.empty())
                return refuse("its path goes through the symbolic link " +
                              (walked / part).string() + ", and the directory holding it " + why +
                              ", so another user could have put it there");
            const std::string target = read_link_at(dir.get(), part);
            if (target.empty() || ++links > kMaxLinks) return fail(ELOOP);
            const std::filesystem::path target_path(target);
            if (target_path.is_absolute()) {
                dir = open_file("/", O_RDONLY | O_DIRECTORY);
                if (!dir) return fail(errno);
                walked = "/";
            }
            push_components(target_path, todo);
            continue;
        }
        walked = part == ".." ? walked.parent_path() : walked / part;
        dir = std::move(next);
    }
    struct stat st;
    if (::fstat(dir.get(), &st) != 0) return fail(errno);
    std::string why = distrust(st, modes);
    if (why.empty() && modes.shared) why = distrust_shared_root(st);
    if (!why.empty()) return refuse(std::move(why));
    result.fd = std::move(dir);
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
