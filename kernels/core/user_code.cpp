#include "user_code.hpp"

#include <algorithm>
#include <cctype>

namespace kiln::detail {

std::vector<std::string_view> tokenize(std::string_view code) {
    // Two-character operators that contain '=' must not read as an assignment.
    static constexpr std::string_view kPairs[] = {
        "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=",
        "|=", "^=", "->", "::", "++", "--", "&&", "||", "<<", ">>"};
    std::vector<std::string_view> tokens;
    tokens.reserve(code.size() / 2 + 1);
    std::size_t p = 0;
    while (p < code.size()) {
        const char c = code[p];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++p;
        } else if (c == '/' && p + 1 < code.size() && (code[p + 1] == '/' || code[p + 1] == '*')) {
            const bool line = code[p + 1] == '/';
            const std::size_t end = code.find(line ? "\n" : "*/", p + 2);
            p = end == std::string_view::npos ? code.size() : end + (line ? 1 : 2);
        } else if (identifier_char(c) && !(c >= '0' && c <= '9')) {
            std::size_t q = p;
            while (q < code.size() && identifier_char(code[q]))
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
            std::string_view token = code.substr(p, 1);
            const std::string_view two = code.substr(p, 2);
            for (const std::string_view pair : kPairs)
                if (two == pair) token = two;
            tokens.push_back(token);
            p += token.size();
        }
    }
    return tokens;
}

bool mentions_word(const std::string& code, const std::string& word) {
    for (std::size_t at = code.find(word); at != std::string::npos; at = code.find(word, at + 1)) {
        const std::size_t end = at + word.size();
        if ((at == 0 || !identifier_char(code[at - 1])) &&
            (end == code.size() || !identifier_char(code[end])))
            return true;
    }
    return false;
}

bool macros_use(const std::string& preamble, std::initializer_list<const char*> words) {
    std::size_t line = 0;
    while (line < preamble.size()) {
        std::size_t end = line;
        while (end < preamble.size() &&
               (preamble[end] != '\n' || (end > 0 && preamble[end - 1] == '\\')))
            ++end;
        const auto tokens = tokenize(std::string_view(preamble).substr(line, end - line));
        if (tokens.size() > 1 && tokens[0] == "#" && tokens[1] == "define")
            for (const char* word : words)
                if (std::find(tokens.begin(), tokens.end(), std::string_view(word)) != tokens.end())
                    return true;
        line = end + 1;
    }
    return false;
}

} // namespace kiln::detail
