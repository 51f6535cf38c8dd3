#pragma once
// What every `kiln` command shares about its output: JSON printing, errors (also as JSON under
// --json), and whether standard output could be written at all.

#include <nlohmann/json.hpp>

#include <exception>
#include <string>

namespace kiln::tools {

/// Print @p value on stdout as one JSON document, indented.
void print_json(const nlohmann::json& value);

/// @p value as JSON text (@p indent as nlohmann's dump()); bytes that are not UTF-8 (an NVRTC log
/// quoting a source's bytes, a file name) become U+FFFD instead of aborting the command.
std::string json_text(const nlohmann::json& value, int indent = -1);

/// A command given --json calls this, so that an error it ends with is also a JSON object on
/// stdout: {"error": MESSAGE, "kind": KIND, ...}.
void set_json_errors(bool on);

/// Report @p error: "kiln: MESSAGE" on stderr and, under --json, an object on stdout with
/// @p details merged in. Returns the exit status, 1.
int report_error(const std::exception& error, const nlohmann::json& details = nullptr);

/// "compile", "config", "argument", "no_device" or "error": the kind of a Kiln error for JSON.
std::string error_kind(const std::exception& error);

/// 0 when everything written to stdout (printf or std::cout) reached it, else an errno
/// (ENOSPC for `> /dev/full`, EBADF for a closed stdout, EIO when unknown).
int stdout_error();

} // namespace kiln::tools
