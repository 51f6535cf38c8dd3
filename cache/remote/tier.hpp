#pragma once
// The remote tier behind Store::load and Store::store: lookups on the caller's thread with one
// deadline, publishes on a background thread (only where the key is absent, with the TTL when one
// is set; a value found damaged is replaced outright, once per process), a circuit breaker that
// skips a failing server, and probes that bring it back, all off the callers' path. It speaks to
// the server only through a remote::Backend (backend.hpp), so it holds the policy and no wire
// protocol: keys, deadlines, the breaker, what each Failure means for the cache, and the counters.
//
// Deadlines grow with the value: a read's once the reply announces its size, a publish's from the
// start, by the same allowance (transfer_time() in tier.cpp), so a large entry this tier published
// can also be read back in time. Nothing runs past the process's exit deadline.
//
// Damage: a value under a Kiln key that no entry can be (over kMaxRemoteValue, not a string, or
// failing to decode) is a miss, counted, and remembered; the next publish of that key replaces it
// (SET without NX). When this process's own entry for it is over the limit too, so nothing can
// replace it, the value is deleted instead. Each key is replaced or deleted at most once per
// process: a value damaged again after that (another writer, a poisoner) is a counted miss, never
// a write war. Read-only mode never writes.
//
// Breaker: any failed or late operation (down, slow, frozen, authentication refused, a protocol
// error) opens it, with one warning; while open, lookups and publishes are skipped (counted as
// skipped). The background thread probes (Backend::ping: a fresh connection and a round trip) once
// the retry interval has passed, and closes it on success. A full server (Failure::Kind::full on
// a publish) only stops publishing for the retry interval: lookups go on, since a full server
// still serves hits.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/remote.hpp"
#include "kiln/cache/signing.hpp"

#include "backend.hpp"

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace kiln::cache::remote {

class Tier;

/// A claim on compiling one key across hosts (Tier::try_claim): a lease on the server under
/// kClaimKeyPrefix and the key, renewed by a thread of its own every quarter lease while held.
/// Its destruction ends the lease, or, when the entry was queued for publishing meanwhile, leaves
/// that to the publish once the value is on the server, so that waiters find the value before
/// they can take the claim.
class RemoteClaim {
  public:
    RemoteClaim(Tier& tier, Key key, std::string owner);
    ~RemoteClaim();
    RemoteClaim(const RemoteClaim&) = delete;
    RemoteClaim& operator=(const RemoteClaim&) = delete;

  private:
    void renew_until_stopped();

    Tier& m_tier;
    const Key m_key;
    const std::string m_owner;
    std::mutex m_mutex;
    std::condition_variable m_stop_cv;
    bool m_stop = false;
    std::thread m_renewer;
};

class Tier {
  public:
    /// A tier over @p backend (made by make_backend() for @p config's scheme).
    /// With @p trusted_keys (KILN_TRUSTED_KEYS), a value is used only when one of them signed it.
    Tier(RemoteConfig config, std::unique_ptr<Backend> backend,
         std::shared_ptr<const TrustedKeys> trusted_keys = nullptr);
    /// Waits for pending publishes once, for at most one deadline (connect plus operation).
    ~Tier();
    /// The bounded wait of the destructor, then the background thread ends; publishes after it
    /// are skipped. Idempotent.
    void shutdown();
    Tier(const Tier&) = delete;
    Tier& operator=(const Tier&) = delete;

    const RemoteConfig& config() const noexcept { return m_config; }

    /// A verified entry and its encoded bytes, or nullopt (a miss, a damaged value, a failure,
    /// or the breaker is open). The read's deadline grows with the size the server announces.
    /// A damaged value is remembered: the next publish of its key replaces it (once per process).
    std::optional<Entry> load(const Key& key, std::string* encoded = nullptr) {
        return lookup(key, encoded, true);
    }

    /// load() for a process waiting for another's compile: the same, but a miss is not counted
    /// (a waiter asks many times).
    std::optional<Entry> poll(const Key& key, std::string* encoded = nullptr);
    /// Queue @p encoded for publishing under @p key (nothing in read-only mode). Never blocks on
    /// the server. When this process holds the key's claim, the publish ends it.
    void publish(const Key& key, std::string encoded);

    /// What try_claim() found.
    enum class ClaimOutcome {
        held,        ///< this process holds the claim now (in @p out)
        busy,        ///< another process, here or on another host, holds it
        unavailable, ///< no claim: read-only mode, the breaker is open, or the server failed now
    };
    /// Try once, within one deadline, to take the claim of compiling @p key.
    ClaimOutcome try_claim(const Key& key, std::unique_ptr<RemoteClaim>& out);
    /// How long a claim lasts without renewal: a holder this silent is taken for dead.
    static constexpr std::chrono::milliseconds kClaimLease{2000};
    /// Run @p task on the background thread: the local write-back of a remote hit, so the caller
    /// does not wait for the disk. Tasks are not given up when the breaker opens; at shutdown,
    /// those not started by the exit deadline are dropped (a write-back is only a copy).
    void defer(std::function<void()> task);
    /// The local copy of @p key was rejected by the driver: its next publish replaces the value
    /// (unless this process replaced it already).
    void mark_damaged(const Key& key);

    /// Wait until every deferred task and queued publish is done or given up (breaker open), or
    /// @p deadline passes.
    /// True when nothing is left.
    bool flush(Clock::time_point deadline);

    /// This process's counters.
    RemoteStats stats() const;
    /// Counters not yet handed out by take_unsaved().
    RemoteStats unsaved() const;
    /// Counters not yet handed out by take_unsaved(); resets them.
    RemoteStats take_unsaved();

    /// Whether the breaker is open now (lookups are skipped).
    bool open() const noexcept { return m_open.load(std::memory_order_acquire); }

  private:
    friend class RemoteClaim;
    struct Job {
        Key key;
        std::string bytes;
        bool replace = false;    ///< SET without NX: the value there is damaged
        bool remove = false;     ///< DEL instead: a damaged value that nothing here can replace
        std::string claim_owner; ///< this process's claim of the key, ended once published
    };
    struct Counter {
        std::atomic<std::uint64_t> value{0};
        void add(std::uint64_t n = 1) { value.fetch_add(n, std::memory_order_relaxed); }
    };

    std::optional<Entry> lookup(const Key& key, std::string* encoded, bool count_miss);
    /// End the lease @p owner holds on @p key's claim (one deadline; a failure is only logged:
    /// the lease runs out by itself).
    void end_claim(const Key& key, const std::string& owner);
    /// One lookup's or claim's deadline: the configured ones, within the exit deadline.
    Deadline operation_deadline() const;
    /// Count @p failure (a timeout or an error) and open the breaker.
    void record_failure(const Failure& failure);
    void trip(const std::string& why);
    /// A value under @p key that is no entry for it: a miss, counted, replaced by the next publish.
    void damaged(const Key& key, const std::string& name, const std::string& why);
    /// Remember @p key for replacement, unless this process replaced or deleted it already.
    void remember_damaged_locked(const Key& key);
    void start_thread_locked();
    void run();
    void publish_one(Job& job);
    bool probe();

    const RemoteConfig m_config;
    const std::unique_ptr<Backend> m_backend;
    const std::shared_ptr<const TrustedKeys> m_trusted_keys; ///< null: trust every value
    const std::uint64_t m_max_bulk;

    std::atomic<bool> m_open{false};
    std::atomic<bool> m_warned{false};
    std::atomic<bool> m_warned_damaged{false};
    std::atomic<std::int64_t> m_writes_paused_until{0}; ///< steady ns; a full server
    std::atomic<std::int64_t> m_exit_deadline; ///< steady ns; bounds the thread's operations

    mutable std::mutex m_mutex;        // the queue, the thread, the damaged keys, the probe time
    std::condition_variable m_wake;    // the thread: work, a probe due, or stop
    std::condition_variable m_drained; // flush(): the queue emptied or was given up
    std::deque<Job> m_queue;
    std::deque<std::function<void()>> m_tasks;
    std::uint64_t m_queued_bytes = 0;
    bool m_busy = false;
    bool m_stop = false;
    Clock::time_point m_probe_at{};
    std::unordered_set<Key, KeyHash> m_damaged;   ///< to replace at their next publish
    std::unordered_set<Key, KeyHash> m_rewritten; ///< replaced or deleted once: never again
    /// The claims this process holds, with their owner names; a publish takes its key's out.
    std::unordered_map<Key, std::string, KeyHash> m_claims;
    std::thread m_thread;
    pid_t m_thread_pid = 0;

    Counter m_untrusted; ///< values no trusted key signed
    Counter m_hits, m_misses, m_damaged_count, m_errors, m_timeouts, m_skipped, m_stores,
        m_bytes_read, m_bytes_written;
    mutable std::mutex m_saved_mutex;
    RemoteStats m_saved; ///< what take_unsaved() has handed out
};

} // namespace kiln::cache::remote
