#pragma once
// One compile per key among the processes of one cache directory: before it compiles a key that
// missed, a process takes the key's claim, `<dir>/<ab>/<key>.claim`, an empty file locked with
// flock() for the compile. Others find it locked and wait for the entry instead of compiling too.
// The kernel drops the lock when its holder dies, so a claim never outlives its process; the
// holder unlinks the file before it lets the lock go, so the file stays only when a holder died
// (prune, clear and `verify --fix` remove those).
//
// The name sits in a directory others may write (a team cache), so what is found there may have
// been planted: it is opened without following a link and without blocking on a FIFO, and used
// only when it is a regular file with one link that this user owns (private) or that has the
// directory's group (shared); anything else is removed once and made anew. A lock that a planted
// file keeps held forever costs a waiter at most KILN_COMPILE_WAIT.

#include "kiln/cache/key.hpp"

#include "cache_dir.hpp"
#include "fs.hpp"

#include <string>
#include <string_view>

namespace kiln::cache::detail {

inline constexpr std::string_view kClaimSuffix = ".claim";

/// A held claim: the lock on the claim file of one key. Released (the file unlinked, then the
/// lock dropped) by release() or on destruction.
class ClaimFile {
  public:
    /// What try_take() found.
    enum class Outcome {
        held,     ///< this process holds the claim now
        busy,     ///< another process holds it
        unusable, ///< no claim can be taken here (read-only, unwritable, or refused)
    };

    ClaimFile() = default;
    ClaimFile(ClaimFile&&) noexcept = default;
    ClaimFile& operator=(ClaimFile&& other) noexcept;
    ~ClaimFile() { release(); }
    ClaimFile(const ClaimFile&) = delete;
    ClaimFile& operator=(const ClaimFile&) = delete;

    /// Try once, without waiting, to take the claim of @p key in the shard @p shard_fd of a
    /// directory with @p modes. On `held`, @p out holds it (with its own descriptor of the
    /// shard).
    static Outcome try_take(int shard_fd, const Key& key, const Modes& modes, ClaimFile& out);

    bool held() const noexcept { return static_cast<bool>(m_fd); }
    /// Unlink the claim file, then drop the lock. Idempotent.
    void release() noexcept;

  private:
    UniqueFd m_shard; ///< the shard directory it is in
    UniqueFd m_fd;    ///< the claim file, locked
    std::string m_name;
};

/// Whether @p name is a claim file's.
bool is_claim_name(std::string_view name);

/// Remove the claim file @p name in @p shard_fd when no process holds it (a holder that died) or
/// when it is not a regular file (planted, or damage); a held claim is left alone. True when it
/// went.
bool remove_claim_if_stale(int shard_fd, const std::string& name);

} // namespace kiln::cache::detail
