#pragma once
// The cache directory and its shard directories: the one place that creates them, with the modes
// of the mode in force, and the checks that decide whether a directory found there is trusted.
//
// A cache directory may be shared with other users, so every name in it may have been planted.
// The store therefore works through directory descriptors: the cache directory is opened once
// (O_DIRECTORY) and checked; each shard is opened relative to it with O_NOFOLLOW and checked on
// the descriptor it then uses, so a link or a directory swapped in later is never followed.
//
//   private (default)        directories 0700, files 0600; every directory must be owned by
//                            this user and writable by nobody else
//   shared (KILN_CACHE_SHARED=1)  directories 2770, files 0660, new directories take the group
//                            of the directory they are created in; never writable by every user.
//                            The cache directory itself must be one only the team could have
//                            made: one of the caller's groups, setgid, nothing for others, owned
//                            by the caller, root or a member of its group
//
// The cache directory's path is walked component by component with O_NOFOLLOW: a symbolic link
// on the way is followed only when the directory holding it is writable by no one but the caller
// and root, so a link another user could have swapped in is refused like an untrusted directory.

#include "fs.hpp"

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <string>

namespace kiln::cache::detail {

struct Modes {
    mode_t dir;
    mode_t file;
    bool shared;
};

/// Private: 0700 / 0600. Shared: 02770 / 0660.
Modes modes_for(bool shared);

/// Why a directory with status @p st must not be used as (part of) a cache under @p modes, or ""
/// when it may: owned by another user in a private cache, writable by other users.
std::string distrust(const struct stat& st, const Modes& modes);

/// Create the directory @p name in @p parent_fd with @p modes (past the umask; with the parent's
/// group when shared). 0, EEXIST when something is already there, or another errno.
int make_dir_at(int parent_fd, const std::string& name, const Modes& modes);

/// The cache directory, opened.
struct OpenedRoot {
    UniqueFd fd;
    int error = 0;        ///< when !fd: the errno (ENOENT: missing and not created)
    std::string distrust; ///< when !fd and error == EPERM: why it is not trusted
};

/// Open the cache directory @p root, creating it and its missing parents (each with @p modes)
/// when @p create, walking its path as the top of this file says. A directory that fails
/// distrust() (or, shared, the team checks), or whose path goes through a link another user could
/// have planted, is not opened: error EPERM and distrust says why.
OpenedRoot open_root(const std::filesystem::path& root, const Modes& modes, bool create);

/// A shard directory, opened relative to the cache directory.
struct OpenedShard {
    UniqueFd fd;
    int error = 0;        ///< when !fd: the errno (ENOENT: missing and not created)
    std::string problem;  ///< when !fd and something is in the way or untrusted: what
    bool removed = false; ///< a file or link in the shard's place was removed (then recreated)
};

/// Open shard @p shard ("00" ... "ff") of the cache directory @p root_fd. With @p create a missing
/// shard is made, and a file or link found in its place is removed first; a directory that fails
/// distrust() is refused, never changed.
OpenedShard open_shard(int root_fd, int shard, const Modes& modes, bool create);

} // namespace kiln::cache::detail
