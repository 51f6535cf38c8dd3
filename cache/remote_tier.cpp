#include "remote_tier.hpp"

#include "kiln/log.hpp"

#include "layout.hpp"
#include "remote_stats_file.hpp"
#include "store_impl.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kiln::cache::detail {

namespace {

/// The largest value the tier reads or publishes. A bigger one could not arrive within one
/// operation's deadline anyway; one found under a Kiln key is treated as damaged.
constexpr std::uint64_t kMaxRemoteValue = std::uint64_t{64} << 20;
/// Publishes waiting for the background thread, at most (past it, new ones are skipped).
constexpr std::uint64_t kMaxQueuedBytes = std::uint64_t{256} << 20;
constexpr std::size_t kMaxIdleConnections = 8;

std::int64_t steady_ns(Clock::time_point t) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Clock::time_point from_steady_ns(std::int64_t ns) {
    return Clock::time_point(
        std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

std::string redis_key(const Key& key) {
    return std::string(kRemoteKeyPrefix) + key.hex();
}

void log_info(const std::string& message) noexcept {
    try {
        logger().info("{}", message);
    } catch (...) {
    }
}

} // namespace

RemoteTier::RemoteTier(RemoteConfig config)
    : m_config(std::move(config))
    , m_max_bulk(kMaxRemoteValue)
    , m_exit_deadline(steady_ns(Clock::time_point::max())) {
    // The logger is made before this tier, so it outlives the tier of a static store (the global
    // one), whose shutdown at exit may still log.
    try {
        logger();
    } catch (...) {
        // A bad KILN_LOG_LEVEL: warnings are dropped (detail::warn), the tier works all the same.
    }
}

RemoteTier::~RemoteTier() {
    shutdown();
}

void RemoteTier::shutdown() {
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

std::optional<RedisClient> RemoteTier::take_connection(Clock::time_point deadline,
                                                       RedisResult& failure, bool& reused) {
    {
        std::lock_guard<std::mutex> lock(m_pool_mutex);
        reused = !m_pool.empty();
        if (reused) {
            RedisClient client = std::move(m_pool.back());
            m_pool.pop_back();
            return client;
        }
    }
    RedisClient client;
    failure = client.connect(m_config, deadline);
    if (!failure.ok()) return std::nullopt;
    return client;
}

void RemoteTier::give_back(RedisClient client) {
    if (!client.connected()) return;
    std::lock_guard<std::mutex> lock(m_pool_mutex);
    if (m_pool.size() < kMaxIdleConnections) m_pool.push_back(std::move(client));
}

void RemoteTier::record_failure(const RedisResult& result, const char* what) {
    if (result.status == RedisStatus::timeout)
        m_timeouts.add();
    else
        m_errors.add();
    trip(std::string(what) + ": " + result.message);
}

void RemoteTier::trip(const std::string& why) {
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
    {
        std::lock_guard<std::mutex> lock(m_pool_mutex);
        m_pool.clear();
    }
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

void RemoteTier::start_thread_locked() {
    if (m_thread.joinable()) return;
    try {
        m_thread = std::thread([this] { run(); });
        m_thread_pid = ::getpid();
    } catch (const std::exception&) {
        // No thread: publishes stay queued and are given up at exit, and an open breaker stays
        // open (no prober); lookups work while it is closed.
    }
}

std::optional<Entry> RemoteTier::load(const Key& key, std::string* encoded) {
    if (open()) {
        m_skipped.add();
        return std::nullopt;
    }
    const auto start = Clock::now();
    RedisResult failure;
    bool reused = false;
    auto client = take_connection(start + m_config.connect_timeout, failure, reused);
    if (!client) {
        record_failure(failure, "connect");
        return std::nullopt;
    }
    const std::string name = redis_key(key);
    RedisResult result =
        client->command({"GET", name}, Clock::now() + m_config.op_timeout, m_max_bulk);
    // An idle connection the server closed meanwhile (a restart, its `timeout` setting) fails at
    // once: one fresh connection before calling it the server's failure.
    if (result.status == RedisStatus::failed && reused) {
        failure = client->connect(m_config, Clock::now() + m_config.connect_timeout);
        if (!failure.ok()) {
            record_failure(failure, "connect");
            return std::nullopt;
        }
        result = client->command({"GET", name}, Clock::now() + m_config.op_timeout, m_max_bulk);
    }
    if (result.status == RedisStatus::too_large) {
        // Not a server failure: a value no entry can be. Damaged, replaced by the next publish.
        damaged(key, name, "larger than any entry");
        return std::nullopt;
    }
    if (!result.ok()) {
        record_failure(result, "GET");
        return std::nullopt;
    }
    if (result.reply.is_error() && result.reply.text.compare(0, 9, "WRONGTYPE") == 0) {
        give_back(std::move(*client));
        damaged(key, name, "not a string");
        return std::nullopt;
    }
    if (result.reply.is_error()) {
        m_errors.add();
        trip("GET: " + result.reply.text);
        return std::nullopt;
    }
    give_back(std::move(*client));
    if (result.reply.type == RedisReply::Type::nil) {
        m_misses.add();
        return std::nullopt;
    }
    if (result.reply.type != RedisReply::Type::bulk) {
        m_errors.add();
        trip("GET: an unexpected reply type");
        return std::nullopt;
    }
    m_bytes_read.add(result.reply.text.size());
    DecodeResult decoded = decode_entry(result.reply.text, key);
    if (!decoded.entry) {
        damaged(key, name, to_string(decoded.error));
        return std::nullopt;
    }
    m_hits.add();
    if (encoded) *encoded = std::move(result.reply.text);
    return std::move(decoded.entry);
}

void RemoteTier::damaged(const Key& key, const std::string& name, const std::string& why) {
    m_misses.add();
    m_damaged_count.add();
    if (m_config.mode != RemoteMode::read_only) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_damaged.insert(key);
    }
    if (m_warned_damaged.exchange(true)) return;
    warn("the remote kernel cache " + m_config.display_url() + " holds a damaged value under " +
         name + " (" + why + "): it is treated as a miss" +
         (m_config.mode == RemoteMode::read_only ? ""
                                                 : " and replaced when the kernel is compiled") +
         ". Further damaged values are not reported; `kiln cache stats` counts them.");
}

void RemoteTier::mark_damaged(const Key& key) {
    if (m_config.mode == RemoteMode::read_only) return;
    std::lock_guard<std::mutex> lock(m_mutex);
    m_damaged.insert(key);
}

void RemoteTier::publish(const Key& key, std::string encoded) {
    if (m_config.mode == RemoteMode::read_only) return;
    const auto now = Clock::now();
    if (open() || encoded.size() > m_max_bulk ||
        steady_ns(now) < m_writes_paused_until.load(std::memory_order_relaxed)) {
        m_skipped.add();
        return;
    }
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stop || m_queued_bytes + encoded.size() > kMaxQueuedBytes) {
        m_skipped.add();
        return;
    }
    Job job;
    job.key = key;
    job.replace = m_damaged.erase(key) != 0;
    job.bytes = std::move(encoded);
    m_queued_bytes += job.bytes.size();
    m_queue.push_back(std::move(job));
    start_thread_locked();
    m_wake.notify_all();
}

void RemoteTier::defer(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_stop) return;
    m_tasks.push_back(std::move(task));
    start_thread_locked();
    m_wake.notify_all();
}

bool RemoteTier::flush(Clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(m_mutex);
    const auto idle = [this] { return m_tasks.empty() && m_queue.empty() && !m_busy; };
    m_drained.wait_until(lock, deadline, [&] {
        return idle() || !m_thread.joinable() || (m_open.load() && m_tasks.empty() && !m_busy);
    });
    return idle();
}

void RemoteTier::publish_one(RedisClient& client, Job& job) {
    const auto start = Clock::now();
    if (steady_ns(start) < m_writes_paused_until.load(std::memory_order_relaxed) ||
        start >= from_steady_ns(m_exit_deadline.load())) {
        m_skipped.add();
        return;
    }
    const auto exit_deadline = from_steady_ns(m_exit_deadline.load());
    const auto connect = [&] {
        RedisResult connected = client.connect(
            m_config, std::min(Clock::now() + m_config.connect_timeout, exit_deadline));
        if (!connected.ok()) record_failure(connected, "connect");
        return connected.ok();
    };
    const bool reused = client.connected();
    if (!reused && !connect()) return;
    const std::string name = redis_key(job.key);
    const std::string ttl = std::to_string(m_config.ttl.count());
    std::vector<std::string_view> args{"SET", name, job.bytes};
    if (!job.replace) args.emplace_back("NX");
    if (m_config.ttl.count() > 0) {
        args.emplace_back("EX");
        args.emplace_back(ttl);
    }
    // No caller waits on a publish: its deadline grows with the value (1 ms per 256 KiB).
    const auto allowance = std::chrono::milliseconds(job.bytes.size() >> 18);
    const auto deadline = [&] {
        return std::min(Clock::now() + m_config.op_timeout + allowance, exit_deadline);
    };
    RedisResult result = client.command(args, deadline());
    // A connection the server closed while idle: once more on a fresh one (SET is idempotent).
    if (result.status == RedisStatus::failed && reused) {
        if (!connect()) return;
        result = client.command(args, deadline());
    }
    if (!result.ok()) {
        record_failure(result, "SET");
        return;
    }
    if (result.reply.is_error()) {
        m_errors.add();
        if (result.reply.text.compare(0, 3, "OOM") == 0) {
            // Full: lookups go on, publishes pause for the retry interval.
            const auto until = Clock::now() + m_config.retry_interval;
            const bool first = m_writes_paused_until.exchange(steady_ns(until)) == 0;
            const std::string message = "the remote kernel cache " + m_config.display_url() +
                                        " is full (" + result.reply.text +
                                        "); publishing is paused and tried again later. Give "
                                        "it more memory or an eviction policy (allkeys-lru).";
            if (first && !m_warned.exchange(true))
                warn(message);
            else
                log_info(message);
            return;
        }
        trip("SET: " + result.reply.text);
        return;
    }
    m_stores.add();
    m_bytes_written.add(job.bytes.size());
}

bool RemoteTier::probe(RedisClient& client) {
    const auto start = Clock::now();
    RedisResult result = client.connect(m_config, start + m_config.connect_timeout);
    if (!result.ok()) return false;
    result = client.command({"PING"}, Clock::now() + m_config.op_timeout);
    if (!result.ok() || !result.reply.is_status("PONG")) {
        client.close();
        return false;
    }
    return true;
}

void RemoteTier::run() {
    RedisClient client;
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
                const bool well = probe(client);
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
        publish_one(client, job);
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

RemoteStats RemoteTier::stats() const {
    RemoteStats s;
    s.hits = m_hits.value.load();
    s.misses = m_misses.value.load();
    s.damaged = m_damaged_count.value.load();
    s.errors = m_errors.value.load();
    s.timeouts = m_timeouts.value.load();
    s.skipped = m_skipped.value.load();
    s.stores = m_stores.value.load();
    s.bytes_read = m_bytes_read.value.load();
    s.bytes_written = m_bytes_written.value.load();
    return s;
}

RemoteStats RemoteTier::unsaved() const {
    std::lock_guard<std::mutex> lock(m_saved_mutex);
    return difference(stats(), m_saved);
}

RemoteStats RemoteTier::take_unsaved() {
    std::lock_guard<std::mutex> lock(m_saved_mutex);
    const RemoteStats now = stats();
    const RemoteStats delta = difference(now, m_saved);
    m_saved = now;
    return delta;
}

} // namespace kiln::cache::detail
