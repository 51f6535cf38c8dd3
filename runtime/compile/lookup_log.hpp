#pragma once
// KILN_LOG_LEVEL=debug: one line per disk-cache lookup of the compiler, a hit with its key, a miss
// with its key and why it missed (kiln/cache/explain.hpp). Kept out of the compiler's code: the
// compiler makes one call, and pays nothing below debug level.

#include <functional>

namespace kiln {
class Program;
namespace cache {
struct Entry;
class Store;
} // namespace cache

namespace detail {

/// Log @p program's disk-cache lookup in @p store at debug level, explaining a miss against the
/// directory (a scan of its entries' metadata, at debug level only). @p wanted describes the
/// compile as its entry would (recipe, link inputs); called only for a miss that is explained.
/// Never throws.
void log_disk_lookup(cache::Store& store, const Program& program,
                     const std::function<cache::Entry()>& wanted) noexcept;

} // namespace detail
} // namespace kiln
