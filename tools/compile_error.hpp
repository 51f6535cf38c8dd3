#pragma once
// A compile error as the user of `kiln compile FILE` should see it. NVRTC is given the path of
// the cache's copy of the source as program name (Nsight Compute opens it from the cubin's line
// table), so its log speaks of that path; the user wrote FILE, with the same line numbers.

#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace kiln::tools {

/// A kiln::Error that carries fields for the JSON form of the error (output.hpp).
class DetailedError : public Error {
  public:
    DetailedError(const std::string& message, std::string kind, nlohmann::json details)
        : Error(message)
        , m_kind(std::move(kind))
        , m_details(std::move(details)) {}
    const std::string& kind() const noexcept { return m_kind; }
    const nlohmann::json& details() const noexcept { return m_details; }

  private:
    std::string m_kind;
    nlohmann::json m_details;
};

/// @p error with each of @p program_names (the names NVRTC may have been given) replaced by
/// @p file, as a DetailedError of kind "compile" whose details hold "file", "log", "options"
/// and "diagnostics" ([{"file", "line", "severity", "message"}], from the log's
/// `FILE(LINE): SEVERITY: MESSAGE` lines).
DetailedError compile_failure(const CompileError& error,
                              const std::vector<std::string>& program_names,
                              const std::string& file);

} // namespace kiln::tools
