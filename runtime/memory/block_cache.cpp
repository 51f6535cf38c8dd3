#include "block_cache.hpp"

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
    std::size_t bytes = 0;
    CUdeviceptr pointer = 0;
    std::uint64_t kept = 0; // when it was kept, in the thread's count of kept blocks
};

struct ThreadBlocks;

// Every thread's cache and the streams Kiln made, for a stream's end and for running out of
// memory. Never destroyed: threads that end during static destruction still unregister.
struct BlockRegistry {
    std::mutex mutex;
    std::vector<ThreadBlocks*> threads;
    std::vector<CUstream> streams;
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

void free_block(const Block& block) noexcept {
    // A default stream's handle means the current context's stream: free in the block's context.
    const InContext in_context(block.context);
    driver().cuMemFreeAsync(block.pointer, block.stream);
}

bool default_stream(CUstream stream) {
    return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

struct ThreadBlocks {
    // This thread's; other threads take it only when a stream ends or memory runs out.
    std::mutex mutex;
    std::array<Block, kCachedBlockSlots> slots{};
    std::uint64_t kept = 0; // blocks kept so far
    bool registered = false;
    // The last stream asked about, and whether it was Kiln's, as of g_streams_version.
    CUstream checked = nullptr;
    bool checked_kiln = false;
    std::uint64_t checked_version = ~std::uint64_t{0};

    ~ThreadBlocks() {
        if (registered) {
            BlockRegistry& r = registry();
            const std::lock_guard<std::mutex> lock(r.mutex);
            r.threads.erase(std::find(r.threads.begin(), r.threads.end(), this));
        }
        for (const Block& block : slots)
            if (block.pointer) free_block(block);
    }

    // Whether blocks freed on @p stream may be kept: a default stream or one Kiln made.
    bool cacheable(CUstream stream) {
        if (default_stream(stream)) return true;
        const std::uint64_t version = g_streams_version.load(std::memory_order_acquire);
        if (stream != checked || version != checked_version) {
            BlockRegistry& r = registry();
            const std::lock_guard<std::mutex> lock(r.mutex);
            checked_kiln = std::find(r.streams.begin(), r.streams.end(), stream) != r.streams.end();
            checked = stream;
            checked_version = version;
        }
        return checked_kiln;
    }

    void register_once() {
        if (registered) return;
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        r.threads.push_back(this);
        registered = true;
    }

    // Moves the blocks @p take accepts out of the slots, onto @p taken.
    template <class Take> void take_if(Take take, std::vector<Block>& taken) {
        const std::lock_guard<std::mutex> lock(mutex);
        for (Block& block : slots)
            if (block.pointer && take(block)) taken.push_back(std::exchange(block, Block{}));
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

} // namespace

CUdeviceptr take_cached_block(CUcontext context, CUstream stream, std::size_t bytes) noexcept {
    if (bytes > kMaxCachedBlockBytes || !enabled()) return 0;
    ThreadBlocks& t = t_blocks;
    const std::lock_guard<std::mutex> lock(t.mutex);
    for (Block& block : t.slots)
        if (block.pointer && block.bytes == bytes && block.stream == stream &&
            block.context == context)
            return std::exchange(block, Block{}).pointer;
    return 0;
}

bool keep_freed_block(CUcontext context, CUstream stream, std::size_t bytes,
                      CUdeviceptr pointer) noexcept {
    if (!context || bytes == 0 || bytes > kMaxCachedBlockBytes || !enabled()) return false;
    ThreadBlocks& t = t_blocks;
    try {
        if (!t.cacheable(stream)) return false;
        t.register_once();
    } catch (...) {
        return false; // no memory for the registry: free it now
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
        *slot = {context, stream, bytes, pointer, ++t.kept};
    }
    if (evicted.pointer) free_block(evicted);
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
    for (const Block& block : taken)
        free_block(block);
    return taken.size();
}

namespace {

// A stream Kiln created: its blocks may be cached until stream_ending() is called for it.
void stream_made(CUstream stream) noexcept {
    try {
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        r.streams.push_back(stream);
        g_streams_version.fetch_add(1, std::memory_order_acq_rel);
    } catch (...) {
        // not registered: its blocks are simply never cached
    }
}

void stream_ending(CUstream stream) noexcept {
    std::vector<Block> taken;
    try {
        BlockRegistry& r = registry();
        const std::lock_guard<std::mutex> lock(r.mutex);
        r.streams.erase(std::remove(r.streams.begin(), r.streams.end(), stream), r.streams.end());
        g_streams_version.fetch_add(1, std::memory_order_acq_rel);
        for (ThreadBlocks* thread : r.threads)
            thread->take_if([&](const Block& b) { return b.stream == stream; }, taken);
    } catch (...) {
    }
    for (const Block& block : taken)
        free_block(block); // ordered on the stream, which still exists
}

const bool kStreamHooksRegistered = (set_stream_hooks(&stream_made, &stream_ending), true);

} // namespace

} // namespace kiln::detail
