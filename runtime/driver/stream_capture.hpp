#pragma once
// Whether a stream is being captured into a graph: what Kiln queues there then belongs to the
// graph (the tuner defers, the allocator keeps no block).

#include "kiln/stream.hpp"

namespace kiln::detail {

/// Whether work queued on @p stream now would be captured into a graph, by Kiln or by the
/// application (also when the driver cannot tell).
bool stream_capturing(StreamRef stream) noexcept;

} // namespace kiln::detail
