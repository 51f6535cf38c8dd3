#pragma once
// KILN_DRIVER_TRACE=1: every driver call timed and written to standard error as it returns, with
// the host time since the previous driver call on the same thread (Kiln's own work in between).
// For finding where a first call's time goes; off, the driver table is untouched and costs nothing.
// Kiln's own steps on that path write marks into the same trace (trace_mark), so that the time
// between two driver calls is split among them.

#include "driver.hpp"

namespace kiln::detail {

/// Replaces every entry of @p driver with a timing wrapper around it. Call once, before the
/// table is shared.
void trace_driver_calls(Driver& driver);

/// With the trace on, writes "@p step done" with the host time since the previous line of this
/// thread; otherwise nothing (one relaxed load).
void trace_mark(const char* step) noexcept;

} // namespace kiln::detail
