#pragma once
// How the commands report why a key missed (kiln/cache/explain.hpp): `kiln compile --json`,
// `kiln warm --json` and `kiln cache explain` print the same {"nearest", "differs"} object.

#include "kiln/cache/explain.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/local_store.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::tools {

/// {"nearest": KEY or null, "differs": [FIELD...]}.
nlohmann::json why_json(const cache::MissReason& why);

/// The reason in words: "no entry of this kernel in the cache" or "the nearest entry of this
/// kernel, KEY, differs in: options, arch".
std::string why_text(const cache::MissReason& why);

/// Why the compile of @p key missed: its entry, read back from @p store where the compile stored
/// it, explained against @p explainer (made before the compile, or after it: the entry's own key
/// is never its nearest). null when the entry cannot be read back (a read-only or disabled cache
/// keeps none, or it was evicted meanwhile).
nlohmann::json why_stored(const cache::MissExplainer& explainer, cache::LocalStore& store,
                          const cache::Key& key);

/// The misses the jobs of a `kiln warm` run recorded, one JSON object a line, each with its
/// "job" number: as one array in job order, without the numbers (lines that are not JSON objects
/// are left out).
nlohmann::json missed_json(const std::vector<std::string>& records);

} // namespace kiln::tools
