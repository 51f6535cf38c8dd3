#include "block_cache.hpp"

#include "release_stream.hpp"

#include "driver/driver.hpp"
#include "driver/hooks.hpp"
#include "driver/prepare_steps.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/settings.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::detail {

namespace {

struct Block {
    CUcontext context = nullptr;
    CUstream stream = nullptr;
    std::uint64_t id = 0;    // the stream's (CachedStream::id)
    CUevent event = nullptr; // recorded when a foreign stream's block was kept; null otherwise
    std::size_t bytes = 0;
    CUdeviceptr pointer = 0;
    std::uint64_t kept = 0; // when it was kept, in the thread's count of kept blocks
};

struct KilnStream {
    CUstream handle;
    std::uint64_t id;
};

struct ThreadBlocks;

// Every thread's cache and the streams Kiln made, for a stream's end and for running out of
// memory. Never destroyed: threads that end during static destruction still unregister.
struct BlockRegistry {
    std::mutex mutex;
    std::vector<ThreadBlocks*> threads;
    std::vector<KilnStream> streams;
    BlockCacheCounts ended; // the counts of threads that have ended
};
BlockRegistry& registry() {
    static auto* r = [] {
        auto* made = new BlockRegistry;
        made->threads.reserve(64); // a thread's first kept block then allocates nothing
        made->streams.reserve(64);
        return made;
    }();
    return *r;
}
// Made before main: a call on the hot path never makes it.
const bool kRegistryMade = (registry(), true);

// Bumped when a Kiln stream is made or ends: a thread's remembered answer for a stream is stale.
std::atomic<std::uint64_t> g_streams_version{0};
// Blocks of foreign streams freed through the release stream (rare: not worth a thread's count).
std::atomic<std::uint64_t> g_freed_after_event{0};

bool default_stream(CUstream stream) {
    return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

// Gives @p block back to the driver; its event, if any, is the caller's to reuse or destroy.
void free_block(const Block& block) noexcept {
    if (block.event) {
        // Its stream may be gone: free on one Kiln owns, after the work the event captured.
        free_after_event(block.context, block.pointer, block.event);
        g_freed_after_event.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    // A default stream's handle means the current context's stream: free in the block's context.
    const InContext in_context(block.context);
    driver().cuMemFreeAsync(block.pointer, block.stream);
}

void destroy_event(CUevent event) noexcept {
    if (event) driver().cuEventDestroy(event);
}

struct SpareEvent {
    CUcontext context = nullptr;
    CUevent event = nullptr;
};

struct ThreadBlocks {
    // This thread's; other threads take it only when a stream ends, memory runs out or the
    // counts are read.
    std::mutex mutex;
    std::array<Block, kCachedBlockSlots> slots{};
    std::array<SpareEvent, kCachedBlockSlots> spare_events{}; // for foreign streams' blocks
    std::uint64_t kept = 0;                                   // blocks kept so far
    std::uint64_t kept_foreign = 0, taken = 0;
    bool registered = false;
    // The last stream asked about, whether it was Kiln's and its id then, as of
    // g_streams_version.
    CUstream checked = nullptr;
    bool checked_kiln = false;
    std::uint64_t checked_id = 0;
    std::uint64_t checked_version = ~std::uint64_t{0};

    ~ThreadBlocks() {
        if (registered) {
            BlockRegistry& r = registry();
            const std::lock_guard<std::mutex> lock(r.mutex);
            r.threads.erase(std::find(r.threads.begin(), r.threads.end(), this));
            r.ended.kept += kept;
            r.ended.kept_foreign += kept_foreign;
            r.ended.taken += taken;
        }
        for (const Block& block : slots)
            if (block.pointer) {
                free_block(block);
                destroy_event(block.event);
            }
        for (const SpareEvent& spare : spare_events)
            destroy_event(spare.event);
    }

    // Whether @p stream is a stream Kiln made, and its id then (the memo; see the header).
    bool kiln_stream(CUstream stream, std::uint64_t& id) {
        const std::uint64_t version = g_streams_version.load(std::memory_order_acquire);
        if (stream != checked || version != checked_version) {
            BlockRegistry& r = registry();
            const std::lock_guard<std::mutex> lock(r.mutex);
            const auto found =
                std::find_if(r.streams.begin(), r.streams.end(),
                             [&](const KilnStream& s) { return s.handle == stream; });
            checked_kiln = found != r.streams.end();
            checked_id = checked_kiln ? found->id : 0;
            checked = stream;
            checked_version = version;
        }
        id = checked_id;
        return checked_kiln;
    }

    void register_once() {
        if (registered) return;
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        r.threads.push_back(this);
        registered = true;
    }

    // Under the mutex: a spare event of @p context, or null.
    CUevent take_spare(CUcontext context) noexcept {
        for (SpareEvent& spare : spare_events)
            if (spare.event && spare.context == context)
                return std::exchange(spare, SpareEvent{}).event;
        return nullptr;
    }
    // Under the mutex: keeps @p event for reuse; false when there is no room (destroy it).
    bool give_spare(CUcontext context, CUevent event) noexcept {
        for (SpareEvent& spare : spare_events)
            if (!spare.event) {
                spare = {context, event};
                return true;
            }
        return false;
    }

    // Moves the blocks @p take accepts out of the slots, onto @p taken.
    template <class Take> void take_if(Take take, std::vector<Block>& out) {
        const std::lock_guard<std::mutex> lock(mutex);
        for (Block& block : slots)
            if (block.pointer && take(block)) out.push_back(std::exchange(block, Block{}));
    }
};

thread_local ThreadBlocks t_blocks;

// KILN_BLOCK_CACHE=0 leaves every block to the driver's pool. Read on first use or by prepare().
bool enabled() noexcept {
    static const bool on = [] {
        try {
            return settings::flag(Variable::block_cache);
        } catch (...) {
            return true; // an unparsable value is reported where settings are checked
        }
    }();
    return on;
}
const bool kSettingPrepared = (add_prepare_step([] { enabled(); }), true);

// An event of @p context for a foreign stream's block: a spare of this thread's, or a new one.
CUevent event_for(ThreadBlocks& t, CUcontext context) noexcept {
    {
        const std::lock_guard<std::mutex> lock(t.mutex);
        if (CUevent spare = t.take_spare(context)) return spare;
    }
    const InContext in_context(context);
    CUevent event = nullptr;
    if (!in_context.active() ||
        driver().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
        return nullptr;
    return event;
}

// Back to this thread's spares, or destroyed when they are full.
void recycle_event(ThreadBlocks& t, CUcontext context, CUevent event) noexcept {
    if (!event) return;
    bool kept = false;
    {
        const std::lock_guard<std::mutex> lock(t.mutex);
        kept = t.give_spare(context, event);
    }
    if (!kept) destroy_event(event);
}

} // namespace

bool identify_stream(CUstream stream, CachedStream& out) noexcept {
    out = CachedStream{stream, 0, false};
    if (!enabled()) return false;
    if (default_stream(stream)) return true;
    try {
        if (t_blocks.kiln_stream(stream, out.id)) return true;
        // A program's stream: asked every time (see the header).
        unsigned long long id = 0;
        if (driver().cuStreamGetId(stream, &id) != CUDA_SUCCESS) return false;
        out.id = id;
        out.foreign = true;
        return true;
    } catch (...) {
        return false; // no memory for the registry's lock, or no driver
    }
}

CUdeviceptr take_cached_block(CUcontext context, const CachedStream& stream,
                              std::size_t bytes) noexcept {
    if (bytes > kMaxCachedBlockBytes || !enabled()) return 0;
    ThreadBlocks& t = t_blocks;
    CUdeviceptr pointer = 0;
    CUevent event = nullptr;
    {
        const std::lock_guard<std::mutex> lock(t.mutex);
        for (Block& block : t.slots)
            if (block.pointer && block.bytes == bytes && block.id == stream.id &&
                block.stream == stream.handle && block.context == context) {
                const Block taken = std::exchange(block, Block{});
                ++t.taken;
                pointer = taken.pointer;
                // Taken on its own stream: ordered after the work the event captured anyway.
                if (taken.event && !t.give_spare(context, taken.event)) event = taken.event;
                break;
            }
    }
    destroy_event(event);
    return pointer;
}

bool keep_freed_block(CUcontext context, const CachedStream& stream, std::size_t bytes,
                      CUdeviceptr pointer) noexcept {
    if (!context || bytes == 0 || bytes > kMaxCachedBlockBytes || !enabled()) return false;
    ThreadBlocks& t = t_blocks;
    try {
        t.register_once();
    } catch (...) {
        return false; // no memory for the registry: free it now
    }
    CUevent event = nullptr;
    if (stream.foreign) {
        // What the stream has queued so far, the block's last uses included: the point after
        // which the block may be freed elsewhere, should the stream be gone by then.
        event = event_for(t, context);
        if (!event) return false;
        if (driver().cuEventRecord(event, stream.handle) != CUDA_SUCCESS) {
            recycle_event(t, context, event);
            return false;
        }
    }
    // An empty slot, or else the block kept longest ago, which goes back to the driver: blocks of
    // sizes a program no longer asks for must not keep its current size out for good.
    Block evicted;
    {
        const std::lock_guard<std::mutex> lock(t.mutex);
        Block* slot = &t.slots[0];
        for (Block& block : t.slots) {
            if (!block.pointer) {
                slot = &block;
                break;
            }
            if (block.kept < slot->kept) slot = &block;
        }
        evicted = *slot;
        *slot = {context, stream.handle, stream.id, event, bytes, pointer, ++t.kept};
        if (stream.foreign) ++t.kept_foreign;
    }
    if (evicted.pointer) {
        free_block(evicted);
        recycle_event(t, evicted.context, evicted.event);
    }
    return true;
}

std::size_t release_cached_blocks() noexcept {
    std::vector<Block> taken;
    try {
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        for (ThreadBlocks* thread : r.threads)
            thread->take_if([](const Block&) { return true; }, taken);
    } catch (...) {
    }
    for (const Block& block : taken) {
        free_block(block);
        destroy_event(block.event);
    }
    return taken.size();
}

BlockCacheCounts block_cache_counts() noexcept {
    BlockCacheCounts counts;
    try {
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        counts = r.ended;
        for (ThreadBlocks* thread : r.threads) {
            const std::lock_guard<std::mutex> thread_lock(thread->mutex);
            counts.kept += thread->kept;
            counts.kept_foreign += thread->kept_foreign;
            counts.taken += thread->taken;
        }
    } catch (...) {
    }
    counts.freed_after_event = g_freed_after_event.load(std::memory_order_relaxed);
    return counts;
}

namespace {

// A stream Kiln created: its blocks may be cached until it ends. (Named apart from driver/'s
// hooks, which a unity build puts in the same translation unit.)
void kiln_stream_made(CUstream stream) noexcept {
    try {
        unsigned long long id = 0;
        if (driver().cuStreamGetId(stream, &id) != CUDA_SUCCESS) return; // then treated as foreign
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        r.streams.push_back({stream, id});
        g_streams_version.fetch_add(1, std::memory_order_acq_rel);
    } catch (...) {
        // not registered: its blocks are kept as a foreign stream's
    }
}

void kiln_stream_ending(CUstream stream) noexcept {
    std::vector<Block> taken;
    try {
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        const auto found = std::find_if(r.streams.begin(), r.streams.end(),
                                        [&](const KilnStream& s) { return s.handle == stream; });
        if (found == r.streams.end()) return;
        const std::uint64_t id = found->id;
        r.streams.erase(found);
        g_streams_version.fetch_add(1, std::memory_order_acq_rel);
        // Only this stream's: a destroyed foreign stream's blocks at the same handle have
        // another id and go back through their events.
        for (ThreadBlocks* thread : r.threads)
            thread->take_if([&](const Block& b) { return b.stream == stream && b.id == id; },
                            taken);
    } catch (...) {
    }
    for (const Block& block : taken)
        free_block(block); // ordered on the stream, which still exists
}

const bool kStreamHooksRegistered =
    (set_stream_hooks(&kiln_stream_made, &kiln_stream_ending), true);

} // namespace

} // namespace kiln::detail
