#pragma once
/// @file
/// Why a key missed: the nearest entry of the same kernel in the cache directory, and which of
/// the key's fields differ from it (`kiln compile --json`, `kiln warm --json`, `kiln cache
/// explain`, and the compiler's log at KILN_LOG_LEVEL=debug). Computed only when asked: a
/// MissExplainer reads the metadata of every entry in the directory (not their payloads), which
/// no lookup does.
///
/// What is "the same kernel": for a front end's kernel (the recipe holds a description), an entry
/// of the same front end and spec name (the description's first field, `{"elementwise":
/// {"name": ...`); for source the user wrote, an entry without a description that holds a kernel
/// of the same symbol name. Entries that record no kernel names (entry format 1) match nothing.
///
///     cache::MissExplainer explainer(store.local());  // one scan of the directory
///     cache::MissReason why = explainer.explain(*store.local().peek(key));

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln::cache {

class LocalStore;

/// A part of the key by which two compiles of one kernel can differ, named as the tools print it.
/// `source`: the CUDA source (and the link inputs of relocatable code); `options`: the caller's
/// NVRTC options, `-lineinfo` and the name expressions; `headers`: the in-memory headers and
/// whether the toolkit's are includable; `arch`: the target architecture; `nvrtc`: the NVRTC
/// build; `format`: the entry format (an entry of an older Kiln); `kiln`: everything the entry
/// records is the same, yet the key differs, so the Kiln that wrote it keys them otherwise (its
/// key schema, its default options, a linker or device runtime of another toolkit).
enum class KeyField : std::uint8_t { source, options, headers, arch, nvrtc, format, kiln };

/// The field's name.
/// @param field the field.
/// @return `"source"`, `"options"`, `"headers"`, `"arch"`, `"nvrtc"`, `"format"` or `"kiln"` (a
/// static string).
const char* to_string(KeyField field);

/// Why a key missed.
struct MissReason {
    /// The nearest entry of the same kernel (the fewest fields differing, then the most recently
    /// used); nullopt when the directory holds no entry of this kernel.
    std::optional<Key> nearest;
    /// The fields in which #nearest differs, in KeyField order; empty without #nearest, and when
    /// the nearest entry records too little to tell (no recipe).
    std::vector<KeyField> differs;
};

/// The metadata of a cache directory's entries as they were when it was made, to explain misses
/// against. Scanning costs one read and one metadata decompression per entry (about 0.3 s for
/// 10,000 entries on two cores: bench_explain, bench/RESULTS.md); explaining a key after that
/// costs microseconds. Holds fingerprints of each entry's fields, not their text. Thread-safe
/// once made.
class MissExplainer {
  public:
    /// Read the metadata of every entry in @p store's directory now. Damaged or unreadable entries
    /// are left out; never throws for a damaged cache.
    /// @param store the cache directory; only used during the constructor.
    explicit MissExplainer(LocalStore& store);
    /// Frees the fingerprints.
    ~MissExplainer();
    /// Movable.
    MissExplainer(MissExplainer&&) noexcept;
    /// Movable.
    /// @return this explainer.
    MissExplainer& operator=(MissExplainer&&) noexcept;

    /// Why @p wanted's key was not found: the nearest other entry of its kernel and the fields
    /// that differ. @p wanted describes the compile that missed, as an entry of it would (its
    /// key, recipe, link inputs, arch, NVRTC version, format version and kernel names; the
    /// payload is not read); an entry under @p wanted's own key is never the nearest.
    /// @param wanted the compile that missed, e.g. its entry, read back after it was stored.
    /// @return the nearest entry and the differing fields, or no entry.
    MissReason explain(const Entry& wanted) const;

    /// How many entries the scan read.
    /// @return the entries indexed.
    std::size_t entries() const noexcept;

  private:
    /// One entry's fingerprints (explain.cpp).
    struct Summary;
    /// The fingerprints of @p entry, last used at @p mtime_ns.
    static Summary summarize(const Entry& entry, std::int64_t mtime_ns);
    std::vector<Summary> m_entries;
    /// "spec:<front end>/<name>" or "kernel:<symbol>" -> indices into m_entries.
    std::multimap<std::string, std::size_t> m_by_kernel;
};

} // namespace kiln::cache
