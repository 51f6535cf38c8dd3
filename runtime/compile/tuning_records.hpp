#pragma once
// The launch tuner's records (kiln/cache/tuning_store.hpp) live in the compiler's cache
// directory, with its settings: kernels/ reaches them here, never opening the cache store itself.

#include "kiln/cache/tuning_store.hpp"

namespace kiln::detail {

/// The tuning records of Compiler::global()'s cache directory (a disabled store when the
/// compiler has none). Made on first use.
const cache::TuningStore& tuning_records();

} // namespace kiln::detail
