#pragma once
// Blocks dropped while their stream is being captured into a graph, but made before the capture.
// A free queued on a capturing stream becomes a free node of the graph, which the driver accepts
// only for the graph's own allocations (cuMemFreeAsync: "must be passed the address of a graph
// allocation"); any other block is set aside here and freed in stream order on its stream when
// kiln::Graph::capture ends (the capture-ended hook), after the work queued before the capture.

#include "kiln/stream.hpp"

#include <cuda.h>

namespace kiln::detail {

/// Set @p pointer (stream-ordered memory of @p context, last ordered on @p stream) aside until
/// the capture of @p stream ends. Should the list not grow, the block is kept for good: a leak
/// rather than an invalid free.
void free_after_capture(CUcontext context, StreamRef stream, CUdeviceptr pointer) noexcept;

/// How many blocks wait for a capture to end (tests).
std::size_t blocks_waiting_for_capture() noexcept;

} // namespace kiln::detail
