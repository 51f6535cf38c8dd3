#pragma once
// How the `kiln cache`, `kiln import` and `kiln export` commands get at the cache: the checks
// every one of them makes before it reads or changes anything.

#include "kiln/cache/config.hpp"
#include "kiln/cache/local_store.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::tools {

/// Config::from_environment(), refusing a configuration without a cache directory.
/// @throws kiln::Error saying to set KILN_CACHE_DIR.
cache::Config cache_config();

/// The problems check_dir() finds with @p store's directory. A fatal one (missing, unreadable,
/// not to be trusted) is thrown as a kiln::Error saying what to do; the others are printed on
/// stderr, one line each, when @p print, and returned (for JSON output).
std::vector<cache::DirProblem> check_cache_dir(cache::LocalStore& store, bool print = true);

/// {"path": ..., "what": ...} for each problem.
nlohmann::json problems_json(const std::vector<cache::DirProblem>& problems);

/// Refuse @p command (e.g. "kiln cache clear"), which changes the cache, under
/// KILN_CACHE_READONLY or KILN_CACHE_DISABLE. @throws kiln::Error naming the variable.
void require_writable(const cache::Config& config, const std::string& command);

/// The key @p text names: all 32 hex digits, or the first few of exactly one entry's key in
/// @p store. @throws kiln::ArgumentError for text that is not hex or names several keys,
/// kiln::Error when no entry's key starts with it.
cache::Key resolve_key(cache::LocalStore& store, std::string text);

} // namespace kiln::tools
