#include "write_only_outputs.hpp"

#include <algorithm>
#include <cctype>

namespace kiln::detail {

namespace {

// C++ tokens, enough to tell identifiers, `=` from `==`, and statement structure apart.
std::vector<std::string> tokenize(const std::string& code) {
    std::vector<std::string> tokens;
    std::size_t p = 0;
    while (p < code.size()) {
        const char c = code[p];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++p;
        } else if (c == '/' && p + 1 < code.size() && (code[p + 1] == '/' || code[p + 1] == '*')) {
            const bool line = code[p + 1] == '/';
            const std::size_t end = code.find(line ? "\n" : "*/", p + 2);
            p = end == std::string::npos ? code.size() : end + (line ? 1 : 2);
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t q = p;
            while (q < code.size() &&
                   (std::isalnum(static_cast<unsigned char>(code[q])) || code[q] == '_'))
                ++q;
            tokens.push_back(code.substr(p, q - p));
            p = q;
        } else if (c == '"' || c == '\'') {
            std::size_t q = p + 1;
            while (q < code.size() && code[q] != c)
                q += code[q] == '\\' ? 2 : 1;
            tokens.push_back(code.substr(p, q + 1 - p));
            p = q + 1;
        } else {
            // Two-character operators that contain '=' must not read as an assignment.
            static const char* pairs[] = {
                "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=",
                "|=", "^=", "->", "::", "++", "--", "&&", "||", "<<", ">>"};
            std::string token(1, c);
            for (const char* pair : pairs)
                if (code.compare(p, 2, pair) == 0) token = pair;
            tokens.push_back(token);
            p += token.size();
        }
    }
    return tokens;
}

// Whether a #define of @p preamble (its continuation lines included) has a statement that
// leaves the code it expands in: a macro that does can skip an assignment the operation makes.
bool macro_has_control_flow(const std::string& preamble) {
    std::size_t line = 0;
    while (line < preamble.size()) {
        std::size_t end = line;
        while (end < preamble.size() &&
               (preamble[end] != '\n' || (end > 0 && preamble[end - 1] == '\\')))
            ++end;
        const auto tokens = tokenize(preamble.substr(line, end - line));
        if (tokens.size() > 1 && tokens[0] == "#" && tokens[1] == "define")
            for (const char* control : {"return", "goto", "break", "continue"})
                if (std::find(tokens.begin(), tokens.end(), control) != tokens.end()) return true;
        line = end + 1;
    }
    return false;
}

} // namespace

bool outputs_are_write_only(const std::string& operation, const std::vector<std::string>& outputs,
                            const std::string& preamble) {
    static const char* control_words[] = {"if",     "else", "for",    "while", "do",
                                          "switch", "goto", "return", "break", "continue",
                                          "{",      "}",    "case"};
    if (macro_has_control_flow(preamble)) return false;
    const auto tokens = tokenize(operation);
    bool statement_start = true;
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        const std::string& token = tokens[t];
        for (const char* control : control_words)
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
