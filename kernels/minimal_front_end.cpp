#include "minimal_front_end.hpp"

#include "user_code.hpp"

#include <algorithm>
#include <array>

namespace kiln::detail {

namespace {

// The headers a generated kernel's head may include that compile the same under -minimal (checked
// cubin for cubin by tests/kernels/test_minimal_front_end.cpp).
bool allowed_include(std::string_view name) {
    if (name.substr(0, 5) == "kiln/") return true;
    return name == "cuda_fp16.h" || name == "cuda_bf16.h";
}

// Every `#include` line names an allowed header, in quotes or angle brackets.
bool includes_fit(std::string_view source) {
    for (std::size_t at = source.find('#'); at != std::string_view::npos;
         at = source.find('#', at + 1)) {
        std::size_t i = at + 1;
        while (i < source.size() && (source[i] == ' ' || source[i] == '\t'))
            ++i;
        if (source.substr(i, 7) != "include") continue;
        const std::size_t open = source.find_first_of("\"<\n", i + 7);
        if (open == std::string_view::npos || source[open] == '\n') return false; // a macro
        const std::size_t close = source.find(source[open] == '"' ? '"' : '>', open + 1);
        if (close == std::string_view::npos) return false;
        if (!allowed_include(source.substr(open + 1, close - open - 1))) return false;
    }
    return true;
}

// No identifier begins with a prefix of what -minimal removes (comments and strings included:
// a false alarm only costs the full front end). `#include` lines are skipped: includes_fit()
// checks those.
bool names_fit(std::string_view source) {
    constexpr std::array<std::string_view, 3> kPrefixes = {"cuda", "tex", "surf"};
    for (std::size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '#' && source.substr(i + 1, 7) == "include") {
            i = std::min(source.find('\n', i), source.size());
            continue;
        }
        if (!identifier_char(source[i]) || (i > 0 && identifier_char(source[i - 1]))) continue;
        for (std::string_view prefix : kPrefixes)
            if (source.substr(i, prefix.size()) == prefix) return false;
    }
    return true;
}

bool options_fit(const std::vector<std::string>& options) {
    constexpr std::array<std::string_view, 7> kMarks = {"minimal",  "rdc",  "relocatable", "-dc",
                                                        "device-c", "dlto", "dlink"};
    for (const std::string& option : options)
        for (std::string_view mark : kMarks)
            if (option.find(mark) != std::string::npos) return false;
    return true;
}

} // namespace

bool minimal_front_end_fits(std::string_view source,
                            const std::vector<std::string>& nvrtc_options) {
    return options_fit(nvrtc_options) && source.find("<<<") == std::string_view::npos &&
           includes_fit(source) && names_fit(source);
}

} // namespace kiln::detail
