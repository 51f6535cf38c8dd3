#include "kiln/param_spec.hpp"

#include "kiln/error.hpp"

#include <cctype>
#include <set>

namespace kiln {

namespace {

// Names the generated code declares in the scope of the user's code, which parameters may not
// shadow: CuPy's (`i`, the index objects `_ind`, `_in_ind`, `_out_ind`, the reduction's `_i`, `_j`,
// `_J`, `_type_reduce`) and Kiln's own, which all start with `_kiln` or `kiln_` or are formed from
// an operand's name (`_raw_x`, `_v0_x`, ...). Every other name CuPy accepts is a legal parameter
// name, `_count` and `_n` included.
const std::set<std::string> kReserved = {"i",           "raw",  "kiln",    "kiln_index_t",
                                         "kiln_params", "_ind", "_in_ind", "_out_ind",
                                         "_i",          "_j",   "_J",      "_type_reduce"};
const char* const kReservedPrefixes[] = {"kiln_", "_kiln", "_raw_", "_st_", "_o_", "_oc_",
                                         "_k_",   "_e_",   "_t_",   "_s_",  "_v_"};

bool reserved(const std::string& name) {
    if (kReserved.count(name)) return true;
    for (const char* prefix : kReservedPrefixes)
        if (name.rfind(prefix, 0) == 0) return true;
    // _v0_x, _v1_x, ...: the unrolled loads of the reduction code generator.
    std::size_t digits = 2;
    while (digits < name.size() && std::isdigit(static_cast<unsigned char>(name[digits])))
        ++digits;
    return name.rfind("_v", 0) == 0 && digits > 2 && digits < name.size() && name[digits] == '_';
}

[[noreturn]] void fail(const std::string& spec, std::size_t at, const std::string& what) {
    std::string caret(at, ' ');
    throw SpecError("bad parameter spec: " + what + "\n  " + spec + "\n  " + caret + "^");
}

bool ident_start(char c) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

struct Token {
    std::string text;
    std::size_t at;
};

// Split one parameter into identifier tokens; anything else is a fault at its position.
std::vector<Token> tokens(const std::string& spec, std::size_t begin, std::size_t end) {
    std::vector<Token> out;
    std::size_t p = begin;
    while (p < end) {
        if (std::isspace(static_cast<unsigned char>(spec[p]))) {
            ++p;
        } else if (ident_start(spec[p])) {
            std::size_t q = p;
            while (q < end && ident_char(spec[q]))
                ++q;
            out.push_back({spec.substr(p, q - p), p});
            p = q;
        } else {
            fail(spec, p, std::string("unexpected '") + spec[p] + "'");
        }
    }
    return out;
}

bool is_placeholder(const std::string& type) {
    return type.size() == 1 && std::isalpha(static_cast<unsigned char>(type[0]));
}

} // namespace

std::vector<ParamSpec> parse_param_specs(const std::string& spec) {
    std::vector<ParamSpec> params;
    bool blank = true;
    for (char c : spec)
        blank = blank && std::isspace(static_cast<unsigned char>(c));
    if (blank) return params;

    std::set<std::string> names;
    std::size_t begin = 0;
    while (true) {
        const std::size_t comma = spec.find(',', begin);
        const std::size_t end = comma == std::string::npos ? spec.size() : comma;
        auto t = tokens(spec, begin, end);
        if (t.empty()) fail(spec, begin < spec.size() ? begin : spec.size(), "empty parameter");
        ParamSpec p;
        std::size_t k = 0;
        if (t[0].text == "raw") {
            p.raw = true;
            k = 1;
        }
        if (t.size() < k + 2)
            fail(spec, t.back().at + t.back().text.size(),
                 t.size() == k ? "a type and a name are missing" : "a parameter name is missing");
        if (t.size() > k + 2) fail(spec, t[k + 2].at, "unexpected '" + t[k + 2].text + "'");
        const Token& type = t[k];
        const Token& name = t[k + 1];
        p.type_text = type.text;
        if (is_placeholder(type.text)) {
            p.placeholder = type.text;
        } else if (type.text == "cudaTextureObject_t" || type.text == "cudaSurfaceObject_t") {
            p.dtype = DType::uint64; // a 64-bit handle, given a kiln::Texture or kiln::Surface
        } else {
            try {
                p.dtype = parse_dtype(type.text);
            } catch (const Error&) {
                fail(spec, type.at,
                     "unknown type '" + type.text +
                         "' (use a dtype such as float32, int64, bool, complex64, or a one-letter "
                         "placeholder such as T)");
            }
        }
        if (reserved(name.text))
            fail(spec, name.at, "'" + name.text + "' is reserved by the generated code");
        if (!names.insert(name.text).second)
            fail(spec, name.at, "'" + name.text + "' is declared twice");
        p.name = name.text;
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
