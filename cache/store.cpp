// The lookup façade: the directory first (local/local_tier.hpp), then the remote tier
// (remote/tier.hpp) when one is configured; a store goes to both, encoded once. The remote
// tier's counters are kept in the directory (remote/remote_stats_file.hpp) by this file, the one
// place that knows both tiers, so that neither includes the other.

#include "kiln/cache/store.hpp"

#include "compression.hpp"
#include "seal.hpp"
#include "store_impl.hpp"
#include "warn.hpp"

#include "local/layout.hpp"
#include "local/read_scratch.hpp"
#include "remote/backend.hpp"
#include "remote/remote_stats_file.hpp"

#include <exception>
#include <mutex>

namespace kiln::cache {

Store::Impl::Impl(Config config)
    : local(config) {
    if (config.remote && !config.disabled)
        remote = std::make_unique<remote::Tier>(
            *config.remote, remote::make_backend(*config.remote), config.trusted_keys);
}

Store::Impl::~Impl() {
    tier().save_read_ahead();
    if (remote) {
        remote->shutdown(); // one bounded wait for queued publishes
        save_remote_stats();
    }
}

RemoteStats Store::Impl::remote_unsaved() {
    std::lock_guard<std::mutex> lock(m_remote_stats_mutex);
    RemoteStats unsaved = m_remote_unsaved;
    if (remote) unsaved += remote->unsaved();
    return unsaved;
}

void Store::Impl::save_remote_stats() {
    if (!remote) return;
    std::lock_guard<std::mutex> lock(m_remote_stats_mutex);
    m_remote_unsaved += remote->take_unsaved();
    if (!directory().in_use() || local.config().readonly) return; // counted in this process only
    if (detail::is_zero(m_remote_unsaved)) return;
    auto root_fd = directory().root(true);
    const detail::Modes& modes = directory().modes();
    if (root_fd &&
        detail::add_remote_stats(root_fd->get(), m_remote_unsaved, modes.file, modes.shared))
        m_remote_unsaved = {};
}

void Store::Impl::keep_remote_hit(const Key& key, std::string bytes) {
    if (!directory().in_use() || local.config().readonly || !remote) return;
    // Kept locally, so the next process on this machine finds it on disk. It is marked as come
    // from elsewhere: with trusted keys it is used again only for its signature, which the tier
    // checked (trust.hpp), so later processes here need not check it again.
    remote->defer([&tier = tier(), key, bytes = std::move(bytes),
                   checked = static_cast<bool>(local.config().trusted_keys)]() mutable {
        if (detail::set_provenance(bytes, checked ? Provenance::verified : Provenance::imported))
            tier.publish(key, bytes, false);
    });
}

Store::Store(Config config)
    : m_impl(std::make_unique<Impl>(std::move(config))) {}

Store::~Store() = default;

const Config& Store::config() const noexcept {
    return m_impl->local.config();
}

LocalStore& Store::local() noexcept {
    return m_impl->local;
}

const LocalStore& Store::local() const noexcept {
    return m_impl->local;
}

std::optional<Entry> Store::load(const Key& key, EntryParts parts) {
    const Config& config = m_impl->local.config();
    if (config.disabled) return std::nullopt;
    remote::Tier* remote = m_impl->remote.get();
    detail::LocalTier& tier = m_impl->tier();
    const bool local = m_impl->directory().in_use();
    if (local)
        if (auto entry = tier.load(key, parts, detail::LocalTier::Lookup::counted, remote))
            return entry;
    if (!remote) return std::nullopt;
    try {
        std::string bytes;
        auto entry = remote->load(key, &bytes);
        if (entry) m_impl->keep_remote_hit(key, std::move(bytes));
        return entry;
    } catch (const std::exception& e) {
        detail::warn(std::string("remote kernel cache lookup failed: ") + e.what());
        return std::nullopt;
    }
}

bool Store::store(const Entry& entry) {
    const Config& config = m_impl->local.config();
    if (config.disabled) return false;
    const bool local = m_impl->directory().in_use() && !config.readonly;
    const bool remote = m_impl->remote && m_impl->remote->config().mode != RemoteMode::read_only;
    if (!local && !remote) return false;
    try {
        std::string bytes = encode_entry(entry, config.signing_key.get());
        bool stored = true;
        if (local) stored = m_impl->tier().publish(entry.key, bytes, true);
        if (remote) m_impl->remote->publish(entry.key, std::move(bytes));
        return stored;
    } catch (const std::exception& e) {
        detail::warn(std::string("kernel cache store failed: ") + e.what());
        return false;
    }
}

std::optional<Memo> Store::load_memo(const Key& signature) {
    return m_impl->tier().load_memo(signature);
}

bool Store::store_memo(const Key& signature, const Memo& memo) {
    return m_impl->tier().store_memo(signature, memo);
}

void Store::invalidate(const Key& key) {
    if (m_impl->local.config().disabled) return;
    if (m_impl->remote) m_impl->remote->mark_damaged(key);
    if (m_impl->directory().in_use()) m_impl->tier().invalidate(key);
}

bool Store::flush_remote(std::chrono::milliseconds timeout) {
    if (!m_impl->remote) return true;
    try {
        const bool done = m_impl->remote->flush(remote::Clock::now() + timeout);
        m_impl->save_remote_stats();
        return done;
    } catch (const std::exception& e) {
        detail::warn(std::string("remote kernel cache flush failed: ") + e.what());
        return false;
    }
}

RemoteStats Store::remote_stats() {
    RemoteStats stats = m_impl->remote_unsaved();
    try {
        if (auto root = m_impl->directory().root(false))
            stats += detail::read_remote_stats(root->get(), m_impl->directory().modes().shared);
    } catch (const std::exception&) {
        // Counters are for display: what could not be read is left out.
    }
    return stats;
}

void Store::prepare() noexcept {
    detail::ReadScratch::fault_in();
    try {
        Entry entry;
        entry.key = KeyBuilder().add("warm-up", "entry").finish();
        entry.payload = detail::zstd_warm_up_sample(); // zstd's cubin paths run once
        entry.kernel_names = {"warm_up"};
        entry.lowered_names = {{"warm_up<float>", "_Z7warm_upIfEvv"}};
        entry.nvrtc_version = entry.arch = entry.log = "warm-up";
        Recipe recipe;
        recipe.source = "warm-up";
        recipe.options = {"-lineinfo"};
        recipe.headers = {{"kiln/prelude.cuh", "warm-up"}};
        entry.recipe = std::move(recipe);
        (void)decode_entry_in_place(encode_entry(entry), entry.key);
        const Config& config = m_impl->local.config();
        if (!config.disabled && !config.dir.empty())
            (void)m_impl->local.peek(KeyBuilder().add("warm-up", "no entry has this key").finish());
    } catch (...) {
        // nothing prepared: the first lookup does it
    }
}

void Store::read_ahead(std::string_view program) noexcept {
    m_impl->tier().read_ahead(program);
}

void Store::visit_read_ahead_cubins(
    const std::function<void(std::string_view, const std::vector<std::string_view>&)>& visit)
    const noexcept {
    m_impl->tier().visit_read_ahead_cubins(visit);
}

Store& Store::global() {
    static Store instance(Config::from_environment());
    return instance;
}

} // namespace kiln::cache
