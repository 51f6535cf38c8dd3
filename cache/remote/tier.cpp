// The remote tier (tier.hpp): the breaker, the publishing thread and the counters, over a
// remote::Backend. Nothing here knows the wire protocol; what a Failure's kind means for the
// cache (a miss, damage, a paused publisher, an open breaker) is decided here.

#include "tier.hpp"

#include "log_line.hpp"

#include "trust.hpp"
#include "warn.hpp"

#include "remote_stats_file.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kiln::cache::remote {

using detail::log_info;
using detail::warn;

namespace {

/// The largest value the tier reads or publishes. A bigger one could not arrive within one
/// operation's deadline anyway; one found under a Kiln key is treated as damaged.
constexpr std::uint64_t kMaxRemoteValue = std::uint64_t{64} << 20;
/// Publishes waiting for the background thread, at most (past it, new ones are skipped).
constexpr std::uint64_t kMaxQueuedBytes = std::uint64_t{256} << 20;

std::int64_t steady_ns(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Clock::time_point from_steady_ns(std::int64_t ns) {
    return Clock::time_point(
        std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

/// What a value of @p bytes adds to an operation's deadline: 1 ms per 256 KiB (about 2 Gbit/s).
/// Reads and publishes share it, so an entry published in time can be read back in time.
Clock::duration transfer_time(std::uint64_t bytes) {
    return std::chrono::milliseconds(bytes >> 18);
}

std::string remote_key(const Key& key) {
    return std::string(kRemoteKeyPrefix) + key.hex();
}

} // namespace

Tier::Tier(RemoteConfig config, std::unique_ptr<Backend> backend,
           std::shared_ptr<const TrustedKeys> trusted_keys)
    : m_config(std::move(config))
    , m_backend(std::move(backend))
    , m_trusted_keys(std::move(trusted_keys))
    , m_max_bulk(kMaxRemoteValue)
    , m_exit_deadline(steady_ns(Clock::time_point::max())) {
    // The logger is made before this tier, so it outlives the tier of a static store (the global
    // one), whose shutdown at exit may still log.
    try {
        kiln::detail::log_enabled(kiln::detail::LogLevel::error);
    } catch (...) {
        // A bad KILN_LOG_LEVEL: warnings are dropped (detail::warn), the tier works all the same.
    }
}

Tier::~Tier() {
    shutdown();
}

void Tier::shutdown() {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_stop = true; // nothing is queued or started from now on
    if (!m_thread.joinable()) return;
    // One bounded wait for what is still queued: the thread's operations end by this deadline.
    const auto deadline = Clock::now() + m_config.connect_timeout + m_config.op_timeout;
    m_exit_deadline.store(steady_ns(deadline));
    m_wake.notify_all();
    std::thread thread = std::move(m_thread);
    const bool ours = m_thread_pid == ::getpid();
    lock.unlock();
    try {
        if (ours)
            thread.join();
        else
            new std::thread(std::move(thread)); // a forked child: the thread is not here to join
    } catch (const std::exception&) {
        // Never throw from a destructor: a thread that cannot be joined is left to end alone.
        if (thread.joinable()) thread.detach();
    }
}

void Tier::record_failure(const Failure& failure) {
    if (failure.kind == Failure::Kind::timeout)
        m_timeouts.add();
    else
        m_errors.add();
    trip(failure.step + ": " + failure.message);
}

void Tier::trip(const std::string& why) {
    std::uint64_t dropped = 0;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        const bool was_open = m_open.exchange(true, std::memory_order_acq_rel);
        if (!was_open) m_probe_at = Clock::now() + m_config.retry_interval;
        // Publishes waiting now would meet the same server: give them up.
        for (const auto& job : m_queue)
            m_queued_bytes -= job.bytes.size();
        dropped = m_queue.size();
        m_queue.clear();
        m_drained.notify_all();
        if (!m_stop) start_thread_locked(); // the prober
        m_wake.notify_all();
        if (was_open) {
            m_skipped.add(dropped);
            return;
        }
    }
    m_skipped.add(dropped);
    m_backend->reset(); // idle connections to a server that just failed are not reused
    char every[32];
    std::snprintf(every, sizeof every, "%g s",
                  std::chrono::duration<double>(m_config.retry_interval).count());
    const std::string message =
        "the remote kernel cache " + m_config.display_url() + " failed (" + why +
        "); it is skipped in this process and probed again in the background every " + every +
        ". Kernels come from the local cache or are compiled. Check the server, or unset "
        "KILN_REMOTE_CACHE.";
    if (!m_warned.exchange(true))
        warn(message + " Further failures of the remote cache are logged at level info.");
    else
        log_info(message);
}

void Tier::start_thread_locked() {
    if (m_thread.joinable()) return;
    try {
        m_thread = std::thread([this] { run(); });
        m_thread_pid = ::getpid();
    } catch (const std::exception&) {
        // No thread: publishes stay queued and are given up at exit, and an open breaker stays
        // open (no prober); lookups work while it is closed.
    }
}

std::optional<Entry> Tier::lookup(const Key& key, std::string* encoded, bool count_miss) {
    if (open()) {
        m_skipped.add();
        return std::nullopt;
    }
    const std::string name = remote_key(key);
    const Deadline deadline = operation_deadline();
    // The reply's announced size gives the read the time a publish of that size has. A value no
    // entry can be is refused before its bytes are read.
    const std::uint64_t max_size = m_max_bulk;
    const Clock::time_point at_most = deadline.at_most;
    auto got = m_backend->get(name, deadline,
                              [max_size, at_most](std::uint64_t size, Clock::time_point by)
                                  -> std::optional<Clock::time_point> {
                                  if (size > max_size) return std::nullopt;
                                  return std::min(by + transfer_time(size), at_most);
                              });
    if (!got.ok()) {
        const Failure& failure = got.failure();
        // Not the server's failure: a value no entry can be. Damaged, replaced by the next
        // publish.
        if (failure.kind == Failure::Kind::too_large)
            damaged(key, name, "larger than any entry");
        else if (failure.kind == Failure::Kind::wrong_type)
            damaged(key, name, failure.message);
        else
            record_failure(failure);
        return std::nullopt;
    }
    if (!got.value()) {
        if (count_miss) m_misses.add();
        return std::nullopt;
    }
    std::string& bytes = *got.value();
    m_bytes_read.add(bytes.size());
    if (m_trusted_keys) {
        using namespace cache::detail;
        const TrustCheck check =
            check_trust(bytes, SealDomain::entry, Origin::remote, m_trusted_keys.get());
        if (check.verdict == Verdict::untrusted) {
            // Not replaced: a trusted writer's publish of the same key does that.
            m_misses.add();
            m_untrusted.add();
            warn_untrusted(std::string(to_string(Origin::remote)) + " (" + name + ")", "the entry");
            return std::nullopt;
        }
    }
    DecodeResult decoded = decode_entry(bytes, key);
    if (!decoded.entry && decoded.error == DecodeError::unsupported) {
        m_misses.add(); // a newer Kiln's entry: left alone
        return std::nullopt;
    }
    if (!decoded.entry) {
        damaged(key, name, to_string(decoded.error));
        return std::nullopt;
    }
    m_hits.add();
    if (encoded) *encoded = std::move(bytes);
    return std::move(decoded.entry);
}

void Tier::damaged(const Key& key, const std::string& name, const std::string& why) {
    m_misses.add();
    m_damaged_count.add();
    if (m_config.mode != RemoteMode::read_only) {
        std::lock_guard<std::mutex> lock(m_mutex);
        remember_damaged_locked(key);
    }
    if (m_warned_damaged.exchange(true)) return;
    warn("the remote kernel cache " + m_config.display_url() + " holds a damaged value under " +
         name + " (" + why + "): it is treated as a miss" +
         (m_config.mode == RemoteMode::read_only
              ? ""
              : " and replaced when the kernel is compiled (once per process)") +
         ". Further damaged values are not reported; `kiln cache stats` counts them.");
}

void Tier::remember_damaged_locked(const Key& key) {
    // Once per key and process: a value damaged again after this process replaced it has another
    // writer, and writing it back on every miss would only be a write war over that key.
    if (m_rewritten.count(key) == 0) m_damaged.insert(key);
}

void Tier::mark_damaged(const Key& key) {
    if (m_config.mode == RemoteMode::read_only) return;
    std::lock_guard<std::mutex> lock(m_mutex);
    remember_damaged_locked(key);
}

void Tier::publish(const Key& key, std::string encoded) {
    if (m_config.mode == RemoteMode::read_only) return;
    const auto now = Clock::now();
    if (open() || steady_ns(now) < m_writes_paused_until.load(std::memory_order_relaxed)) {
        m_skipped.add();
        return;
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    const bool too_large = encoded.size() > m_max_bulk;
    if (m_stop || (!too_large && m_queued_bytes + encoded.size() > kMaxQueuedBytes)) {
        m_skipped.add();
        return;
    }
    Job job;
    job.key = key;
    job.replace = m_damaged.erase(key) != 0;
    if (job.replace) m_rewritten.insert(key); // tried once, whatever comes of it
    if (too_large) {
        // Never published; a damaged value it would have replaced is deleted instead, so lookups
        // elsewhere stop paying for it.
        m_skipped.add();
        if (!job.replace) return;
        job.replace = false;
        job.remove = true;
        encoded.clear();
    }
    if (auto claim = m_claims.find(key); claim != m_claims.end()) {
        job.claim_owner = std::move(claim->second); // ended once the value is there
        m_claims.erase(claim);
    }
    job.bytes = std::move(encoded);
    m_queued_bytes += job.bytes.size();
    m_queue.push_back(std::move(job));
    start_thread_locked();
    m_wake.notify_all();
}

void Tier::defer(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stop) return;
    m_tasks.push_back(std::move(task));
    start_thread_locked();
    m_wake.notify_all();
}

bool Tier::flush(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(m_mutex);
    const auto idle = [this] { return m_tasks.empty() && m_queue.empty() && !m_busy; };
    m_drained.wait_until(lock, deadline, [&] {
        return idle() || !m_thread.joinable() || (m_open.load() && m_tasks.empty() && !m_busy);
    });
    return idle();
}

void Tier::publish_one(Job& job) {
    const auto start = Clock::now();
    const auto exit_deadline = from_steady_ns(m_exit_deadline.load());
    if (steady_ns(start) < m_writes_paused_until.load(std::memory_order_relaxed) ||
        start >= exit_deadline) {
        m_skipped.add();
        return;
    }
    Deadline deadline = operation_deadline();
    deadline.reply += transfer_time(job.bytes.size());
    if (job.remove) {
        auto removed = m_backend->remove(remote_key(job.key), deadline);
        if (!removed.ok())
            record_failure(removed.failure());
        else if (!job.claim_owner.empty())
            end_claim(job.key, job.claim_owner); // nothing to wait for: the entry is too large
        return;
    }
    PutOptions options;
    options.only_if_absent = !job.replace;
    options.ttl = m_config.ttl;
    auto put = m_backend->put(remote_key(job.key), job.bytes, options, deadline);
    // The claim ends once the value is there; a server that just failed is not asked again (the
    // lease runs out by itself).
    if (!job.claim_owner.empty() && (put.ok() || put.failure().kind == Failure::Kind::full))
        end_claim(job.key, job.claim_owner);
    if (!put.ok()) {
        const Failure& failure = put.failure();
        if (failure.kind != Failure::Kind::full) {
            record_failure(failure);
            return;
        }
        // Full: lookups go on, publishes pause for the retry interval.
        m_errors.add();
        const auto until = Clock::now() + m_config.retry_interval;
        const bool first = m_writes_paused_until.exchange(steady_ns(until)) == 0;
        const std::string message = "the remote kernel cache " + m_config.display_url() +
                                    " is full (" + failure.message +
                                    "); publishing is paused and tried again later. Give "
                                    "it more memory or an eviction policy (allkeys-lru).";
        if (first && !m_warned.exchange(true))
            warn(message);
        else
            log_info(message);
        return;
    }
    // A value already there (only_if_absent) counts as published too: the server has it.
    m_stores.add();
    m_bytes_written.add(job.bytes.size());
}

Deadline Tier::operation_deadline() const {
    Deadline deadline;
    deadline.connect = m_config.connect_timeout;
    deadline.reply = m_config.op_timeout;
    deadline.at_most = from_steady_ns(m_exit_deadline.load());
    return deadline;
}

bool Tier::probe() {
    Deadline deadline;
    deadline.connect = m_config.connect_timeout;
    deadline.reply = m_config.op_timeout;
    return m_backend->ping(deadline).ok();
}

void Tier::run() {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
        const bool open = m_open.load();
        const bool late = m_stop && Clock::now() >= from_steady_ns(m_exit_deadline.load());
        if (!m_tasks.empty() && !late) {
            auto task = std::move(m_tasks.front());
            m_tasks.pop_front();
            m_busy = true;
            lock.unlock();
            try {
                task();
            } catch (...) {
                // A write-back that failed leaves the entry remote only; nothing to report.
            }
            lock.lock();
            m_busy = false;
            if (m_tasks.empty() && m_queue.empty()) m_drained.notify_all();
            continue;
        }
        if (m_stop && (m_queue.empty() || open || late)) break;
        if (open) {
            if (Clock::now() >= m_probe_at) {
                lock.unlock();
                const bool well = probe();
                lock.lock();
                if (well) {
                    m_open.store(false);
                    log_info("the remote kernel cache " + m_config.display_url() +
                             " answers again; it is used from now on");
                } else {
                    m_probe_at = Clock::now() + m_config.retry_interval;
                }
                continue;
            }
            m_wake.wait_until(lock, m_probe_at);
            continue;
        }
        if (m_queue.empty()) {
            m_drained.notify_all();
            m_wake.wait(lock);
            continue;
        }
        Job job = std::move(m_queue.front());
        m_queue.pop_front();
        m_busy = true;
        lock.unlock();
        publish_one(job);
        lock.lock();
        m_queued_bytes -= job.bytes.size();
        m_busy = false;
        if (m_queue.empty()) m_drained.notify_all();
    }
    // Given up at exit: counted, so `kiln cache stats` shows what never arrived.
    m_skipped.add(m_queue.size());
    m_queue.clear();
    m_tasks.clear();
    m_queued_bytes = 0;
    m_busy = false;
    m_drained.notify_all();
}

RemoteStats Tier::stats() const {
    RemoteStats s;
    s.hits = m_hits.value.load();
    s.misses = m_misses.value.load();
    s.damaged = m_damaged_count.value.load();
    s.untrusted = m_untrusted.value.load();
    s.errors = m_errors.value.load();
    s.timeouts = m_timeouts.value.load();
    s.skipped = m_skipped.value.load();
    s.stores = m_stores.value.load();
    s.bytes_read = m_bytes_read.value.load();
    s.bytes_written = m_bytes_written.value.load();
    return s;
}

RemoteStats Tier::unsaved() const {
    std::lock_guard<std::mutex> lock(m_saved_mutex);
    return detail::difference(stats(), m_saved);
}

RemoteStats Tier::take_unsaved() {
    std::lock_guard<std::mutex> lock(m_saved_mutex);
    const RemoteStats now = stats();
    const RemoteStats delta = detail::difference(now, m_saved);
    m_saved = now;
    return delta;
}

} // namespace kiln::cache::remote
