#pragma once
// The state behind Store (kiln/cache/store.hpp), shared by the files that implement it: the
// lookups and stores (store.cpp) and the compile claims (compile_claim.cpp).

#include "kiln/cache/store.hpp"

#include "local/directory.hpp"
#include "local/local_tier.hpp"
#include "remote/tier.hpp"

#include <memory>
#include <mutex>
#include <string>

namespace kiln::cache {

struct Store::Impl {
    explicit Impl(Config config);
    ~Impl();

    detail::LocalTier& tier() { return *local.m_tier; }
    detail::Directory& directory() { return *local.m_directory; }
    /// Add the remote tier's unsaved counters to `<dir>/remote-stats` (kept in memory when the
    /// directory is not used, read-only or unwritable).
    void save_remote_stats();
    /// This process's remote counters not yet in the file.
    RemoteStats remote_unsaved();
    /// Keep a remote hit (@p bytes, the value as read) in the directory, written by the remote
    /// tier's thread so that the caller does not wait for the disk; nothing for a read-only or
    /// unused directory.
    void keep_remote_hit(const Key& key, std::string bytes);

    LocalStore local;
    /// The remote tier, when configured and the cache is not disabled. Declared after `local`:
    /// its thread writes remote hits back into the directory, so it ends first.
    std::unique_ptr<remote::Tier> remote;

  private:
    std::mutex m_remote_stats_mutex;
    RemoteStats m_remote_unsaved; ///< taken from the tier, not yet in the file
};

} // namespace kiln::cache
