#pragma once
// What the user's code in a generated kernel mentions, read as C++ tokens: an identifier as a
// whole word, what the macros of a preamble do. The code generators decide from it what the
// generated code needs (a header, a lambda around an operation, loading outputs first).

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// Whether @p c may appear in a C++ identifier (an ASCII letter, a digit or '_'). A table, not
/// the locale's isalnum: scanners call it for every byte of a kernel's source.
inline bool identifier_char(char c) {
    struct Table {
        bool is[256] = {};
        constexpr Table() {
            for (int b = 0; b < 256; ++b)
                is[b] = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
                        (b >= '0' && b <= '9') || b == '_';
        }
    };
    static constexpr Table kTable;
    return kTable.is[static_cast<unsigned char>(c)];
}

/// C++ tokens of @p code, comments dropped: identifiers, string and character literals,
/// two-character operators that contain '=' (so `==` is not an assignment), other characters.
/// Views into @p code, which must outlive them.
std::vector<std::string_view> tokenize(std::string_view code);

/// Whether @p word appears in @p code as a whole identifier (`float16`, not `bfloat16`).
bool mentions_word(const std::string& code, const std::string& word);

/// Whether a `#define` of @p preamble (its continuation lines included) has one of @p words as a
/// token, e.g. a macro that returns.
bool macros_use(const std::string& preamble, std::initializer_list<const char*> words);

} // namespace kiln::detail
