#pragma once
// Whether a stream is being captured into a graph: what Kiln queues there then belongs to the
// graph (the tuner defers, the allocator keeps no block).

#include "kiln/stream.hpp"

namespace kiln::detail {

/// Whether work queued on @p stream now would be captured into a graph, by Kiln or by the
/// application (also when the driver cannot tell).
bool stream_capturing(StreamRef stream) noexcept;

/// Throws CaptureError naming @p call (a Kiln call that would synchronize with @p stream, or copy
/// to or from pageable host memory on it) while @p stream is being captured: refused before
/// anything reaches the driver, so the capture stays valid and Graph::capture can discard it.
void refuse_while_capturing(StreamRef stream, const char* call);

} // namespace kiln::detail
