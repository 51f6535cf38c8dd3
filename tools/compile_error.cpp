// Compile errors in the user's terms (compile_error.hpp).

#include "compile_error.hpp"

#include <regex>
#include <sstream>

namespace kiln::tools {

namespace {

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
    if (from.empty()) return text;
    for (std::size_t at = text.find(from); at != std::string::npos;
         at = text.find(from, at + to.size()))
        text.replace(at, from.size(), to);
    return text;
}

// NVRTC's diagnostic lines: `NAME(LINE): error: MESSAGE` (also warning, remark,
// "catastrophic error").
nlohmann::json diagnostics(const std::string& log) {
    static const std::regex line_pattern(R"(^(.+)\((\d+)\): ([a-z ]+): (.*)$)");
    nlohmann::json found = nlohmann::json::array();
    std::istringstream in(log);
    std::string line;
    std::smatch match;
    while (std::getline(in, line))
        if (std::regex_match(line, match, line_pattern))
            found.push_back({{"file", match[1].str()},
                             {"line", std::stol(match[2].str())},
                             {"severity", match[3].str()},
                             {"message", match[4].str()}});
    return found;
}

} // namespace

DetailedError compile_failure(const CompileError& error,
                              const std::vector<std::string>& program_names,
                              const std::string& file) {
    std::string message = error.what(), log = error.log();
    for (const auto& name : program_names) {
        message = replace_all(message, name, file);
        log = replace_all(log, name, file);
    }
    const std::string summary = message.substr(0, message.find('\n'));
    nlohmann::json details{{"error", summary},
                           {"file", file},
                           {"log", log},
                           {"options", error.options()},
                           {"diagnostics", diagnostics(log)}};
    return DetailedError(message, "compile", std::move(details));
}

} // namespace kiln::tools
