#pragma once
// What a command line that did not parse got wrong: the first word no command knows, named with the
// closest valid one.

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace kiln::tools {

/// The candidate closest to @p word by edit distance (ties: the first), or "" when none is close
/// enough to be a likely typo (more than half the word, at least 2 edits, apart).
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

/// For @p app, whose parse of @p argv failed: "unknown command 'lsx' for 'kiln cache' (did you
/// mean 'ls'?)" or "unknown option '--archh' for 'kiln compile' (did you mean '--arch'?)" for the
/// first word that no (sub)command reached knows; "" when every word is known (the error is of
/// another kind). Walks the words with the app's own tables; called only after a failed parse.
std::string unknown_word(const CLI::App& app, int argc, const char* const* argv);

/// "a, b, c"
std::string comma_list(const std::vector<std::string>& names);

/// The names of @p app's subcommands, in the order they were added.
std::vector<std::string> subcommand_names(const CLI::App& app);

} // namespace kiln::tools
