#pragma once
// Blocks the stream-ordered allocator has just freed, kept by the freeing thread for the next
// allocation of the same size on the same stream in the same context: a repeated call that makes
// its output and drops it (`z = k(x, y)` in a loop) then asks the driver for nothing (the
// cuMemAllocAsync / cuMemFreeAsync pair was most of what such a call cost over a given output).
//
// Reuse is as safe as the driver's own: a block is taken again only on the stream it was freed
// on, so the new work is ordered after the old. A stream is told apart by its context and handle
// for the default streams (special handles that mean the current context's legacy stream, or the
// thread's own; cuStreamGetId answers for them too, with the current context's stream's id, so it
// would add a call and tell nothing the context and handle do not), and by cuStreamGetId for
// every other stream: an id is unique for the life of the process, so a stream the program makes
// after destroying another never gets the destroyed one's blocks, even behind the same handle.
//
// Kiln sees the end of its own streams (kiln::Stream, the release stream), whose blocks go back
// to the driver before the stream is destroyed. A program's own stream (a StreamRef over its
// CUstream) may end unseen, so a block kept for one carries an event recorded on that stream when
// the block was freed (cuEventRecord, the one call such a free adds: events come from a per-thread
// pool, made only while it is empty). If the block is taken again on that stream the event goes
// back to the pool; otherwise (a full cache, the thread's end, memory running out) the block is
// freed on the context's release stream after waiting for the event (release_stream.hpp), never on
// a handle that may be gone.
//
// The hot path: an allocation asks who its stream is once (identify_stream) and the buffer keeps
// the answer for its free. A default stream costs nothing; a Kiln stream is found through the
// thread's memo of the last stream asked about, which is safe because Kiln sees every Kiln stream
// made or ended (a version bumped then invalidates every memo). A program's stream costs one
// cuStreamGetId per allocation, host-only and cheap: a memo keyed by its handle could not be
// trusted, since the program may destroy the stream and make a new one at the same handle
// between two calls without Kiln seeing either.
//
// The allocator (memory.cpp) keeps nothing made or freed on a stream being captured into a graph
// (and asks no id there: the driver refuses cuStreamGetId during a capture). At most kSlots
// blocks of at most kMaxBytes each per thread, the one kept longest ago going back to the driver
// when a fifth is kept; a thread's blocks go back at its exit, and all of them when an allocation
// runs out of memory.

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace kiln::detail {

inline constexpr std::size_t kCachedBlockSlots = 4;
inline constexpr std::size_t kMaxCachedBlockBytes = std::size_t{8} << 20;

/// A stream as the block cache tells streams apart.
struct CachedStream {
    CUstream handle = nullptr;
    std::uint64_t id = 0; ///< cuStreamGetId; 0 for a default stream
    bool foreign = false; ///< not Kiln's: its end is not seen, so a kept block carries an event
};

/// Who @p stream (not being captured) is to the block cache, into @p out; false when blocks on it
/// cannot be kept (caching is off, or the driver gave no id).
bool identify_stream(CUstream stream, CachedStream& out) noexcept;

/// A block of exactly @p bytes this thread freed on @p stream in @p context, taken out of the
/// cache; 0 when there is none.
CUdeviceptr take_cached_block(CUcontext context, const CachedStream& stream,
                              std::size_t bytes) noexcept;

/// Keeps a freed block for reuse (giving back the one this thread kept longest ago when every slot
/// is held); false when it is not kept (the caller frees it).
bool keep_freed_block(CUcontext context, const CachedStream& stream, std::size_t bytes,
                      CUdeviceptr pointer) noexcept;

/// Frees every cached block of every thread (an allocation ran out of memory); the number freed.
std::size_t release_cached_blocks() noexcept;

/// What the cache has done since the process started, all threads together.
struct BlockCacheCounts {
    std::uint64_t taken = 0;             ///< allocations served from the cache
    std::uint64_t kept = 0;              ///< frees kept for reuse
    std::uint64_t kept_foreign = 0;      ///< of those, on streams Kiln did not make
    std::uint64_t freed_after_event = 0; ///< such blocks given back through the release stream
};
BlockCacheCounts block_cache_counts() noexcept;

// A kiln::Stream's blocks may be cached from its creation until it ends: the block cache
// registers driver/'s stream hooks (driver/hooks.hpp), which kiln::Stream calls.

} // namespace kiln::detail
