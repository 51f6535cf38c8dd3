#pragma once
// Scratch memory for reductions that split one output across blocks: partial results and
// arrival counters. One workspace per (context, stream), reused by every launch on that stream:
// launches on one stream run in order, and the last block of each split resets its counter to
// zero, so the hot path allocates and clears nothing.
//
// Under graph capture a launch gets a workspace of its own instead, made, cleared and freed by
// the graph around it (memory nodes): replays on any stream then share nothing with direct calls,
// and a later growth of the stream's workspace cannot free memory a graph still uses.
//
// Caveat: a stream handle reused by the driver after cuStreamDestroy while the destroyed
// stream's reductions still run would share their workspace.

#include "kiln/memory.hpp"
#include "kiln/stream.hpp"

#include <cuda.h>

#include <cstddef>
#include <mutex>

namespace kiln::detail {

struct WorkspaceLease {
    CUdeviceptr partials = 0;
    CUdeviceptr counters = 0;
    /// Under capture: the graph's workspace, freed (a free node) when the lease ends.
    DeviceBuffer owned;
    /// Held until the launch is queued, so no other thread regrows the memory in between.
    std::unique_lock<std::mutex> lock;
};

/// A workspace of at least @p partial_bytes and @p counters zeroed counters for launches on
/// @p stream in @p context. @throws CudaError when memory runs out.
WorkspaceLease lease_workspace(CUcontext context, StreamRef stream, std::size_t partial_bytes,
                               std::size_t counters);

} // namespace kiln::detail
