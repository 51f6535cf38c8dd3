// Store::load_or_claim() and CompileClaim (kiln/cache/store.hpp): one compile per key across the
// processes of a cache directory (local/claim_file.hpp) and across hosts through the remote tier
// (remote/tier_claim.cpp). The directory's claim is taken first, so the processes of one host
// send one remote request per key between them, not one each.

#include "kiln/cache/store.hpp"

#include "store_impl.hpp"
#include "warn.hpp"

#include "local/claim_file.hpp"
#include "local/layout.hpp"

#include <algorithm>
#include <exception>
#include <thread>

namespace kiln::cache {

namespace {

using Clock = std::chrono::steady_clock;

/// How often a waiter looks for the entry: the directory costs an open() that fails, the server
/// a round trip shared by every waiting host.
constexpr std::chrono::milliseconds kLocalPoll{5};
constexpr std::chrono::milliseconds kRemotePoll{25};

// Sleep @p every, or until @p deadline when that comes first; true when it slept.
bool sleep_until_next(Clock::time_point deadline, std::chrono::milliseconds every) {
    const auto now = Clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<Clock::duration>(every, deadline - now));
    return true;
}

} // namespace

struct CompileClaim::State {
    detail::ClaimFile local;
    std::unique_ptr<remote::RemoteClaim> remote;
};

CompileClaim::CompileClaim() noexcept = default;
CompileClaim::~CompileClaim() {
    release();
}
CompileClaim::CompileClaim(CompileClaim&& other) noexcept = default;
CompileClaim& CompileClaim::operator=(CompileClaim&& other) noexcept {
    if (this != &other) {
        release();
        m_state = std::move(other.m_state);
    }
    return *this;
}

bool CompileClaim::held() const noexcept {
    return m_state && (m_state->local.held() || m_state->remote);
}

void CompileClaim::release() noexcept {
    if (!m_state) return;
    // The remote claim first: its waiters on other hosts poll the server, which has the entry
    // once the publish queued with it is done; this host's waiters find the file already.
    m_state->remote.reset();
    m_state->local.release();
    m_state.reset();
}

ClaimedLoad Store::load_or_claim(const Key& key, EntryParts parts) {
    ClaimedLoad out;
    out.entry = load(key, parts);
    const Config& config = m_impl->local.config();
    if (out.entry || config.disabled || config.compile_wait.count() == 0) return out;
    try {
        const auto start = Clock::now();
        const auto deadline = start + config.compile_wait;
        auto state = std::make_unique<CompileClaim::State>();
        bool slept = false;
        const auto waited = [&] { return Clock::now() - start; };

        detail::Directory& directory = m_impl->directory();
        detail::LocalTier& tier = m_impl->tier();
        const auto local_entry = [&] {
            return tier.load(key, parts, detail::LocalTier::Lookup::read_ahead, false);
        };
        if (directory.in_use() && !config.readonly) {
            auto shard = directory.open_shard(detail::shard_of(key), true);
            while (shard) {
                using Outcome = detail::ClaimFile::Outcome;
                const Outcome outcome =
                    detail::ClaimFile::try_take(shard.get(), key, directory.modes(), state->local);
                if (outcome == Outcome::busy) slept |= sleep_until_next(deadline, kLocalPoll);
                // Also once held, or given up: the holder before may have published between the
                // lookup and the lock (a claim taken then goes with `state`).
                if ((out.entry = local_entry())) {
                    out.waited = waited();
                    return out;
                }
                if (outcome != Outcome::busy || Clock::now() >= deadline) break;
            }
        }

        remote::Tier* remote = m_impl->remote.get();
        if (remote && remote->config().mode != RemoteMode::read_only) {
            for (;;) {
                using Outcome = remote::Tier::ClaimOutcome;
                const Outcome outcome = remote->try_claim(key, state->remote);
                if (outcome == Outcome::unavailable) break;
                if (outcome == Outcome::busy) {
                    if (Clock::now() >= deadline) break;
                    slept |= sleep_until_next(deadline, kRemotePoll);
                }
                // Also once the claim is taken: a holder that just finished published the value
                // before it let go, and this host's lookups may have missed it a moment earlier
                // (or a neighbour here got it as a remote hit whose copy is not on disk yet).
                std::string bytes;
                if ((out.entry = remote->poll(key, &bytes))) {
                    m_impl->keep_remote_hit(key, std::move(bytes));
                    out.waited = waited();
                    return out;
                }
                if (outcome == Outcome::held || remote->open()) break;
            }
        }
        if (state->local.held() || state->remote) out.claim.m_state = std::move(state);
        if (slept) out.waited = waited();
        return out;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache claim failed: ") + e.what());
        return out;
    }
}

} // namespace kiln::cache
