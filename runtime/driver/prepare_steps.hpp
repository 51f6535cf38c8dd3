#pragma once
// The part of kiln::prepare() (kiln/startup.hpp) that Kiln's own libraries use: adding a step.

#include "kiln/startup.hpp"

namespace kiln {

namespace detail {

/// Adds a step to prepare() (a library's own one-time work). Call before prepare() runs: from a
/// static initializer.
void add_prepare_step(void (*step)()) noexcept;

} // namespace detail

} // namespace kiln
