#pragma once
/// @file
/// The kernel cache as the compiler sees it: a lookup façade over two tiers, the cache directory
/// (kiln/cache/local_store.hpp: a sharded directory of self-contained entries, atomic publish,
/// verified reads, an LRU size bound, statistics shared across processes) and, when configured, a
/// remote tier (kiln/cache/remote.hpp) behind it. A lookup asks the directory, then the remote
/// tier; a store publishes to both. It never throws for a cache failure: a broken directory or an
/// unreachable server degrades to "no cache" with one warning.
///
/// The maintenance of the directory (`kiln cache ...`: list, verify, prune, statistics, export,
/// import) and the files beside its entries (sources, time traces, memos' paths) are the
/// LocalStore's, reached through local().

#include "kiln/cache/config.hpp"
#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/local_store.hpp"
#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/remote.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::cache {

/// A hold on compiling one key, from Store::load_or_claim(). While it is held, other processes on
/// this cache directory, and through a read-write remote tier other hosts, that miss the same
/// key wait for its entry instead of compiling it too. Store the entry first, then let the claim
/// go: destroy it, or call release(). A process that dies lets its claims go by itself (the
/// directory's is a lock the kernel drops; the remote one a lease that runs out, 2 s unrenewed).
class CompileClaim {
  public:
    /// No claim.
    CompileClaim() noexcept;
    /// Lets the claim go.
    ~CompileClaim();
    /// Moves the claim; @p other holds none afterwards.
    /// @param other the claim to take over.
    CompileClaim(CompileClaim&& other) noexcept;
    /// Lets this claim go and takes @p other's.
    /// @param other the claim to take over.
    /// @return this claim.
    CompileClaim& operator=(CompileClaim&& other) noexcept;
    /// Not copyable: a claim is held once.
    CompileClaim(const CompileClaim&) = delete;
    /// Not copyable.
    CompileClaim& operator=(const CompileClaim&) = delete;

    /// Whether a claim is held (in the directory, on the remote server, or both).
    /// @return whether a claim is held.
    bool held() const noexcept;
    /// Let the claim go now; waiters then find the entry, or compile the key themselves.
    void release() noexcept;

    struct State; ///< the claims held (private to the store)

  private:
    friend class Store;
    std::unique_ptr<State> m_state;
};

/// What Store::load_or_claim() found.
struct ClaimedLoad {
    /// The entry: found at once, or published by the process this one waited for.
    std::optional<Entry> entry;
    /// Without an entry: the claim on compiling it (which may hold nothing: claims off, a
    /// read-only or unusable cache, or the wait ran out).
    CompileClaim claim;
    /// How long this call waited for another process's compile; zero when it did not wait.
    std::chrono::nanoseconds waited{0};
};

/// The kernel cache: the directory (local()), then the remote tier when one is configured. Its
/// methods may be called from any thread, and several processes may share one directory and one
/// server. Most programs use global(); the compiler consults it on every compile that misses in
/// memory.
class Store {
  public:
    /// Open the cache @p config describes. Touches no disk: the directory and its shards are
    /// created by the first operation that needs them.
    /// @param config where the cache is and how it behaves.
    explicit Store(Config config);
    /// Closes the store; entries stay on disk.
    ~Store();
    /// Not copyable: a store holds per-directory state.
    Store(const Store&) = delete;
    /// Not copyable.
    Store& operator=(const Store&) = delete;

    /// The configuration the store was opened with.
    /// @return the configuration the store was opened with.
    const Config& config() const noexcept;

    /// A verified entry, or nullopt (miss, disabled, damaged: damaged entries are removed, counted
    /// and warned about once). A hit refreshes the entry's modification time. With a remote tier,
    /// a local miss asks Redis (at most one deadline); a remote hit is verified the same way and
    /// written to the directory (unless read-only or remote-only) by a background thread, so it
    /// is there once flush_remote() returns.
    /// @param key the entry's key.
    /// @param parts EntryParts::for_loading leaves the recipe and link inputs out (a local hit
    /// then copies only what running the payload needs).
    /// @return the entry, or nullopt.
    std::optional<Entry> load(const Key& key, EntryParts parts = EntryParts::all);

    /// load(), and on a miss the claim on compiling @p key, so that a fleet compiles each key
    /// once: the directory's claim first (a lock file in the key's shard), then the remote
    /// tier's (a lease on the server; not in read-only remote mode). While another process holds
    /// either, this one polls for the entry (the directory every few milliseconds, the server
    /// every few dozen) and returns it when it appears; it takes the claim when the holder lets
    /// go without an entry, and gives up waiting after Config::compile_wait (KILN_COMPILE_WAIT),
    /// returning no entry and no claim. A frozen or failing server costs one deadline (the
    /// breaker then skips it). Never throws for a cache failure.
    /// @param key the entry's key.
    /// @param parts as for load().
    /// @return the entry, or the claim to compile under.
    ClaimedLoad load_or_claim(const Key& key, EntryParts parts = EntryParts::all);

    /// Publish atomically, replacing any entry of the same key, then evict least recently used
    /// entries when the size limit is passed. With a remote tier (read-write or remote-only) the
    /// entry is also queued for Redis (SET NX), which a background thread sends: this call never
    /// waits on the server.
    /// @param entry the entry, filed under Entry::key.
    /// @return false (with one warning per store) when it could not: disabled, read-only or
    /// unwritable caches, or an entry over the format's limits.
    bool store(const Entry& entry);

    /// The memo of @p signature (memo_store.hpp), verified (a regular file this user trusts,
    /// opened without following links, every byte under its hash); nullopt otherwise, and for a
    /// disabled or remote-only cache. A hit refreshes the memo's modification time and counts as
    /// a hit; a miss counts nothing (the entry lookup that follows does).
    /// @param signature the hash of everything that decides a generated kernel's source.
    /// @return the memo, or nullopt.
    std::optional<Memo> load_memo(const Key& signature);
    /// Publish @p memo under @p signature (atomic, never through a planted link). Its bytes count
    /// towards the size limit and eviction removes it as it removes entries.
    /// @param signature the memo's signature.
    /// @param memo what the signature leads to.
    /// @return false when it could not: disabled, read-only, remote-only or unwritable caches, a
    /// name or cubin empty or over the limits (memo_store.hpp), a write error.
    bool store_memo(const Key& signature, const Memo& memo);
    /// The driver rejected this entry's payload: remove it and count it as damaged (the remote
    /// copy is replaced when the kernel is next stored).
    /// @param key the entry's key.
    void invalidate(const Key& key);

    /// Wait, at most @p timeout, for this store's queued remote publishes and write-backs of
    /// remote hits, then add the remote counters to the directory's. `kiln compile` and
    /// `kiln warm` call it before they exit; a store's destruction waits once by itself, for at
    /// most one deadline. Never throws (a failure is warned about and gives false).
    /// @param timeout how long to wait at most.
    /// @return true when nothing is left to send (also without a remote tier).
    bool flush_remote(std::chrono::milliseconds timeout = std::chrono::milliseconds(60000));

    /// The remote tier's counters: those every process added to the cache directory plus this
    /// process's not yet added. Never throws: counters that cannot be read are left out.
    /// @return the counters; all zero when no process ever used a remote tier with this cache.
    RemoteStats remote_stats();

    /// Runs the read path once over nothing real: an entry encoded and decoded in memory, and a
    /// lookup of a key no entry has (counted nowhere); and touches every page of the buffer
    /// lookups read entry files into. kiln::prepare() calls it beside the driver's loading, so
    /// that a process's first real lookup finds the code and that buffer paged in and its library
    /// calls bound. Never throws.
    void prepare() noexcept;

    /// Reads the memos and entries this program's processes used last time into memory, with
    /// every check a lookup makes, so that the first lookup of each is answered without a file
    /// read; what this process uses is then filed under @p program for the next one when the
    /// store is destroyed (at exit for the global one). Only with Config::read_ahead and a local
    /// cache. kiln::prepare() calls it beside the driver's loading, with the main executable's
    /// build-id. A second call does nothing. Never throws: a list or file that is missing,
    /// damaged or untrusted is left to the lookups.
    /// @param program what identifies the program (any bytes; hashed into the list's name).
    void read_ahead(std::string_view program) noexcept;
    /// Calls @p visit with each cubin read ahead and not yet taken by a lookup, and the names of
    /// its kernels (a memo's one, an entry's recorded ones). kiln::Device loads them into a
    /// context it makes, so that each kernel's first call finds its module loaded. Never throws
    /// (an exception from @p visit ends the visit).
    /// @param visit called with a cubin's bytes and its kernels' names, both valid during the call
    /// only; it must not call into the store.
    void visit_read_ahead_cubins(
        const std::function<void(std::string_view cubin,
                                 const std::vector<std::string_view>& kernels)>& visit)
        const noexcept;

    /// Process-wide default store from the environment, created on first use.
    /// @return the store, alive until the end of the program.
    /// @throws kiln::ConfigError (on first use) when a KILN_CACHE_* variable does not parse.
    static Store& global();

    /// The cache directory this store looks up first: its maintenance (`kiln cache ...`), its
    /// statistics, and the files beside its entries.
    /// @return the directory's store, alive as long as this one.
    LocalStore& local() noexcept;
    /// The cache directory, for its paths and configuration.
    /// @return the directory's store, alive as long as this one.
    const LocalStore& local() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln::cache
