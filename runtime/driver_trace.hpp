#pragma once
// KILN_DRIVER_TRACE=1: every driver call timed and written to standard error as it returns, with
// the host time since the previous driver call on the same thread (Kiln's own work in between).
// For finding where a first call's time goes; off, the driver table is untouched and costs nothing.

#include "kiln/detail/driver.hpp"

namespace kiln::detail {

/// Replaces every entry of @p driver with a timing wrapper around it. Call once, before the
/// table is shared.
void trace_driver_calls(Driver& driver);

} // namespace kiln::detail
