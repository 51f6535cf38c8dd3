// The remote tier's claims (tier.hpp): one compile per key across hosts. A process that missed a
// key everywhere takes a lease on `kiln-claim:<key>` (SET NX PX) before it compiles; others find
// it taken and poll for the value instead. The holder renews the lease every quarter of it, so a
// holder that died or froze loses the claim within a lease, and its publish ends the lease once
// the value is on the server.

#include "tier.hpp"

#include "warn.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <cstdio>

namespace kiln::cache::remote {

namespace {

/// Claims live beside the entries, under a prefix of their own: `kiln cache remote stats`
/// counts entries by kRemoteKeyPrefix and must not count claims.
constexpr std::string_view kClaimKeyPrefix = "kiln-claim:";

std::string claim_key(const Key& key) {
    return std::string(kClaimKeyPrefix) + key.hex();
}

// Who holds a claim: the host and process for a person reading the server, and random bytes so
// that a process reusing a pid never takes a lease that was not its own for its own.
std::string new_owner() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    unsigned char random[8] = {};
    if (::getrandom(random, sizeof random, 0) != static_cast<ssize_t>(sizeof random))
        for (unsigned char& byte : random) // no entropy now: the clock still tells apart
            byte = static_cast<unsigned char>(Clock::now().time_since_epoch().count() >> 3);
    char text[320];
    std::snprintf(text, sizeof text, "%s:%d:%02x%02x%02x%02x%02x%02x%02x%02x", host,
                  static_cast<int>(::getpid()), random[0], random[1], random[2], random[3],
                  random[4], random[5], random[6], random[7]);
    return text;
}

} // namespace

RemoteClaim::RemoteClaim(Tier& tier, Key key, std::string owner)
    : m_tier(tier)
    , m_key(key)
    , m_owner(std::move(owner)) {
    try {
        m_renewer = std::thread([this] { renew_until_stopped(); });
    } catch (const std::exception&) {
        // No thread: the lease is not renewed, and a compile longer than it may be repeated
        // elsewhere; nothing worse.
    }
}

RemoteClaim::~RemoteClaim() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_stop = true;
    }
    m_stop_cv.notify_all();
    if (m_renewer.joinable()) m_renewer.join();
    // Still listed: no publish of the key took the claim over, so it ends now.
    bool ours = false;
    {
        std::lock_guard<std::mutex> lock(m_tier.m_mutex);
        auto found = m_tier.m_claims.find(m_key);
        if (found != m_tier.m_claims.end() && found->second == m_owner) {
            m_tier.m_claims.erase(found);
            ours = true;
        }
    }
    if (ours) m_tier.end_claim(m_key, m_owner);
}

void RemoteClaim::renew_until_stopped() {
    const auto every = Tier::kClaimLease / 4;
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stop_cv.wait_for(lock, every, [this] { return m_stop; })) {
        lock.unlock();
        bool keep_going = false;
        if (!m_tier.open()) {
            auto renewed = m_tier.m_backend->renew(claim_key(m_key), m_owner, Tier::kClaimLease,
                                                   m_tier.operation_deadline());
            if (!renewed.ok())
                m_tier.record_failure(renewed.failure());
            else
                keep_going = renewed.value(); // false: the lease ended, another may hold it
        }
        lock.lock();
        if (!keep_going) return;
    }
}

std::optional<Entry> Tier::poll(const Key& key, std::string* encoded) {
    return lookup(key, encoded, false);
}

Tier::ClaimOutcome Tier::try_claim(const Key& key, std::unique_ptr<RemoteClaim>& out) {
    if (m_config.mode == RemoteMode::read_only || open()) return ClaimOutcome::unavailable;
    const std::string owner = new_owner();
    auto claimed = m_backend->claim(claim_key(key), owner, kClaimLease, operation_deadline());
    if (!claimed.ok()) {
        record_failure(claimed.failure());
        return ClaimOutcome::unavailable;
    }
    if (!claimed.value()) return ClaimOutcome::busy;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_claims[key] = owner;
    }
    out = std::make_unique<RemoteClaim>(*this, key, owner);
    return ClaimOutcome::held;
}

void Tier::end_claim(const Key& key, const std::string& owner) {
    if (open()) return; // a failed server is not asked again: the lease runs out by itself
    auto released = m_backend->release(claim_key(key), owner, operation_deadline());
    if (!released.ok())
        detail::log_info("the remote kernel cache " + m_config.display_url() +
                         " did not end a compile claim (" + released.failure().message +
                         "); it runs out within " + std::to_string(kClaimLease.count()) + " ms");
}

} // namespace kiln::cache::remote
