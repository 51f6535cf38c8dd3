#pragma once
// Blocks the stream-ordered allocator has just freed, kept by the freeing thread for the next
// allocation of the same size on the same stream in the same context: a repeated call that makes
// its output and drops it (`z = k(x, y)` in a loop) then asks the driver for nothing (the
// cuMemAllocAsync / cuMemFreeAsync pair was most of what such a call cost over a given output).
//
// Reuse is as safe as the driver's own: a block is taken again only on the stream it was freed
// on, so the new work is ordered after the old. Only streams whose end Kiln sees are used: the
// default streams and kiln::Stream objects, which hand their blocks back to the driver before the
// stream is destroyed (a foreign stream's handle could be reused by a new stream). The allocator
// (memory.cpp) keeps nothing made or freed on a stream being captured into a graph. At most
// kSlots blocks of at most kMaxBytes each per thread, the one kept longest ago going back to the
// driver when a fifth is kept; a thread's blocks go back at its exit, and all of them when an
// allocation runs out of memory.

#include <cuda.h>

#include <cstddef>

namespace kiln::detail {

inline constexpr std::size_t kCachedBlockSlots = 4;
inline constexpr std::size_t kMaxCachedBlockBytes = std::size_t{8} << 20;

/// A block of exactly @p bytes this thread freed on @p stream in @p context, taken out of the
/// cache; 0 when there is none (or caching is off for this stream now).
CUdeviceptr take_cached_block(CUcontext context, CUstream stream, std::size_t bytes) noexcept;

/// Keeps a freed block for reuse (giving back the one this thread kept longest ago when every slot
/// is held); false when it is not kept (the caller frees it).
bool keep_freed_block(CUcontext context, CUstream stream, std::size_t bytes,
                      CUdeviceptr pointer) noexcept;

/// Frees every cached block of every thread (an allocation ran out of memory); the number freed.
std::size_t release_cached_blocks() noexcept;

// A kiln::Stream's blocks may be cached from its creation until it ends: the block cache
// registers driver/'s stream hooks (driver/hooks.hpp), which kiln::Stream calls.

} // namespace kiln::detail
