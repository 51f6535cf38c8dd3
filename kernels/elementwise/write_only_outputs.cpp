#include "write_only_outputs.hpp"

#include "core/user_code.hpp"

#include <algorithm>

namespace kiln::detail {

bool outputs_are_write_only(const std::string& operation, const std::vector<std::string>& outputs,
                            const std::string& preamble) {
    static constexpr std::string_view kControlWords[] = {
        "if",     "else",  "for",      "while", "do", "switch", "goto",
        "return", "break", "continue", "{",     "}",  "case"};
    // A macro that leaves the operation early may skip an assignment where the operation uses it.
    if (macros_use(preamble, {"return", "goto", "break", "continue"})) return false;
    const auto tokens = tokenize(operation);
    bool statement_start = true;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const std::string_view token = tokens[t];
        for (const std::string_view control : kControlWords)
            if (token == control) return false;
        const bool is_output = std::find(outputs.begin(), outputs.end(), token) != outputs.end();
        if (is_output) {
            const bool assigned = statement_start && t + 1 < tokens.size() && tokens[t + 1] == "=";
            if (!assigned) return false;
        }
        statement_start = token == ";";
    }
    // Every output must be assigned at least once, or its elements would be left unwritten.
    for (const auto& output : outputs)
        if (std::find(tokens.begin(), tokens.end(), output) == tokens.end()) return false;
    return true;
}

} // namespace kiln::detail
