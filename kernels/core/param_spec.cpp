#include "kiln/param_spec.hpp"

#include "kiln/error.hpp"
#include "user_code.hpp"

#include <algorithm>
#include <string_view>

namespace kiln {

namespace {

// Parsing runs in a program's first call of each kernel, where a fresh process has cold caches
// (the driver's context creation came just before): it keeps to a few contiguous tables and
// allocates only the parameters it returns.

// Names the generated code declares in the scope of the user's code, which parameters may not
// shadow: CuPy's (`i`, the index objects `_ind`, `_in_ind`, `_out_ind`, the reduction's `_i`, `_j`,
// `_J`, `_type_reduce`) and Kiln's own, which all start with `_kiln` or `kiln_` or are formed from
// an operand's name (`_raw_x`, `_v0_x`, ...). Every other name CuPy accepts is a legal parameter
// name, `_count` and `_n` included.
constexpr std::string_view kReserved[] = {"i",           "raw",  "kiln",    "kiln_index_t",
                                          "kiln_params", "_ind", "_in_ind", "_out_ind",
                                          "_i",          "_j",   "_J",      "_type_reduce"};
constexpr std::string_view kReservedPrefixes[] = {"kiln_", "_kiln", "_raw_", "_st_", "_o_", "_oc_",
                                                  "_k_",   "_e_",   "_t_",   "_s_",  "_v_"};

// The C locale's classes, whatever locale the program set: a spec is ASCII.
constexpr bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
constexpr bool is_alpha(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
constexpr bool ident_start(char c) {
    return is_alpha(c) || c == '_';
}

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

bool reserved(std::string_view name) {
    for (const std::string_view word : kReserved)
        if (name == word) return true;
    for (const std::string_view prefix : kReservedPrefixes)
        if (starts_with(name, prefix)) return true;
    // _v0_x, _v1_x, ...: the unrolled loads of the reduction code generator.
    std::size_t digits = 2;
    while (digits < name.size() && is_digit(name[digits]))
        ++digits;
    return starts_with(name, "_v") && digits > 2 && digits < name.size() && name[digits] == '_';
}

[[noreturn]] void fail(const std::string& spec, std::size_t at, const std::string& what) {
    std::string caret(at, ' ');
    throw SpecError("bad parameter spec: " + what + "\n  " + spec + "\n  " + caret + "^");
}

struct Token {
    std::string_view text;
    std::size_t at = 0;
};

// One parameter's identifier tokens: a parameter is at most `raw`, a type and a name, so the
// first four are kept (a fourth is reported) and the rest only counted.
struct Tokens {
    Token kept[4];
    std::size_t count = 0;
    const Token& back() const { return kept[std::min<std::size_t>(count, 4) - 1]; }
};

// Split one parameter into identifier tokens; anything else is a fault at its position.
Tokens tokens(const std::string& spec, std::size_t begin, std::size_t end) {
    Tokens out;
    std::size_t p = begin;
    while (p < end) {
        if (is_space(spec[p])) {
            ++p;
        } else if (ident_start(spec[p])) {
            std::size_t q = p;
            while (q < end && detail::identifier_char(spec[q]))
                ++q;
            if (out.count < 4) out.kept[out.count] = {std::string_view(spec).substr(p, q - p), p};
            ++out.count;
            p = q;
        } else {
            fail(spec, p, std::string("unexpected '") + spec[p] + "'");
        }
    }
    return out;
}

bool is_placeholder(std::string_view type) {
    return type.size() == 1 && is_alpha(type[0]);
}

} // namespace

std::vector<ParamSpec> parse_param_specs(const std::string& spec) {
    std::vector<ParamSpec> params;
    if (std::all_of(spec.begin(), spec.end(), is_space)) return params;
    params.reserve(static_cast<std::size_t>(std::count(spec.begin(), spec.end(), ',')) + 1);
    std::size_t begin = 0;
    while (true) {
        const std::size_t comma = spec.find(',', begin);
        const std::size_t end = comma == std::string::npos ? spec.size() : comma;
        const Tokens t = tokens(spec, begin, end);
        if (t.count == 0) fail(spec, begin < spec.size() ? begin : spec.size(), "empty parameter");
        ParamSpec p;
        std::size_t k = 0;
        if (t.kept[0].text == "raw") {
            p.raw = true;
            k = 1;
        }
        if (t.count < k + 2)
            fail(spec, t.back().at + t.back().text.size(),
                 t.count == k ? "a type and a name are missing" : "a parameter name is missing");
        if (t.count > k + 2)
            fail(spec, t.kept[k + 2].at, "unexpected '" + std::string(t.kept[k + 2].text) + "'");
        const Token& type = t.kept[k];
        const Token& name = t.kept[k + 1];
        p.type_text = std::string(type.text);
        if (is_placeholder(type.text)) {
            p.placeholder = p.type_text;
        } else if (type.text == "cudaTextureObject_t" || type.text == "cudaSurfaceObject_t") {
            p.dtype = DType::uint64; // a 64-bit handle, given a kiln::Texture or kiln::Surface
        } else {
            try {
                p.dtype = parse_dtype(p.type_text);
            } catch (const Error&) {
                fail(spec, type.at,
                     "unknown type '" + p.type_text +
                         "' (use a dtype such as float32, int64, bool, complex64, or a one-letter "
                         "placeholder such as T)");
            }
        }
        if (reserved(name.text))
            fail(spec, name.at,
                 "'" + std::string(name.text) + "' is reserved by the generated code");
        for (const ParamSpec& earlier : params)
            if (earlier.name == name.text)
                fail(spec, name.at, "'" + std::string(name.text) + "' is declared twice");
        p.name = std::string(name.text);
        params.push_back(std::move(p));
        if (comma == std::string::npos) break;
        begin = comma + 1;
    }
    return params;
}

void check_unique_names(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                        const std::string& in_spec, const std::string& out_spec) {
    for (const auto& out : outputs)
        for (const auto& in : inputs)
            if (in.name == out.name)
                throw SpecError("parameter '" + out.name +
                                "' is both an input and an output\n  in:  " + in_spec +
                                "\n  out: " + out_spec);
}

} // namespace kiln
