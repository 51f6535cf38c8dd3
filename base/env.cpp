#include "kiln/env.hpp"

#include "kiln/error.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace kiln::env {

std::optional<std::string> get(const char* name) {
    const char* value = std::getenv(name);
    if (!value || !*value) return std::nullopt;
    return std::string(value);
}

bool parse_flag(const std::string& text, std::string_view what) {
    std::string v = text;
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
    if (v == "0" || v == "false" || v == "no" || v == "off") return false;
    throw ConfigError(std::string(what) + "='" + text +
                      "' is not a flag: use 1 or 0 (true/false, yes/no, on/off)");
}

bool get_flag(const char* name, bool fallback) {
    auto value = get(name);
    if (!value) return fallback;
    return parse_flag(*value, name);
}

std::optional<std::uint64_t> parse_decimal(std::string_view text, std::uint64_t max) {
    if (text.empty() || text.size() > 12) return std::nullopt;
    std::uint64_t value = 0;
    for (char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (value > max) return std::nullopt;
    return value;
}

std::uint64_t parse_size(const std::string& text, const std::string& what) {
    auto fail = [&]() -> std::uint64_t {
        throw ConfigError(what + "='" + text +
                          "' is not a size: use a number of bytes or a suffix K, M, G, T "
                          "(e.g. 500M, 2G)");
    };
    std::size_t i = 0;
    std::uint64_t number = 0;
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return fail();
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
        if (number > (UINT64_MAX - digit) / 10) return fail();
        number = number * 10 + digit;
        ++i;
    }
    std::string suffix = text.substr(i);
    std::transform(suffix.begin(), suffix.end(), suffix.begin(),
                   [](unsigned char c) { return std::toupper(c); });
    if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
    if (suffix.size() == 2 && suffix[1] == 'I') suffix.pop_back(); // "GiB" reads as "G"
    int shift = 0;
    if (suffix.empty())
        shift = 0;
    else if (suffix == "K")
        shift = 10;
    else if (suffix == "M")
        shift = 20;
    else if (suffix == "G")
        shift = 30;
    else if (suffix == "T")
        shift = 40;
    else
        return fail();
    if (shift && number > (UINT64_MAX >> shift)) return fail();
    return number << shift;
}

std::uint64_t get_size(const char* name, std::uint64_t fallback) {
    auto value = get(name);
    if (!value) return fallback;
    return parse_size(*value, name);
}

} // namespace kiln::env
