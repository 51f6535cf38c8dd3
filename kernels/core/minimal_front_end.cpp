#include "minimal_front_end.hpp"

#include "user_code.hpp"

#include "kiln/error.hpp"

#include <algorithm>
#include <array>
#include <set>

namespace kiln::detail {

namespace {

// The headers a kernel may include that compile the same under -minimal (checked cubin for cubin
// by tests/kernels/test_minimal_front_end.cpp).
bool allowed_include(std::string_view name) {
    if (name.substr(0, 5) == "kiln/") return true;
    return name == "cuda_fp16.h" || name == "cuda_bf16.h";
}

// A preprocessor directive: the word after the line's `#`, and the rest of the line.
struct Directive {
    std::string_view word, rest;
};

// The directive on the line that starts at @p at, if the line is one.
bool directive_at(std::string_view source, std::size_t at, Directive& out) {
    std::size_t i = at;
    while (i < source.size() && (source[i] == ' ' || source[i] == '\t'))
        ++i;
    if (i >= source.size() || source[i] != '#') return false;
    ++i;
    while (i < source.size() && (source[i] == ' ' || source[i] == '\t'))
        ++i;
    std::size_t end = i;
    while (end < source.size() && identifier_char(source[end]))
        ++end;
    const std::size_t line_end = std::min(source.find('\n', end), source.size());
    out.word = source.substr(i, end - i);
    out.rest = source.substr(end, line_end - end);
    return true;
}

// A `#` later in a line that reads as an include or a conditional.
bool hidden_directive(std::string_view line) {
    for (std::size_t at = line.find('#'); at != std::string_view::npos;
         at = line.find('#', at + 1)) {
        Directive d;
        if (directive_at(line, at, d) &&
            (d.word == "include" || d.word == "define" || d.word.substr(0, 2) == "if" ||
             d.word.substr(0, 4) == "elif"))
            return true;
    }
    return false;
}

bool is_identifier_start(char c) {
    return identifier_char(c) && !(c >= '0' && c <= '9');
}

// Calls @p f on each identifier of @p text (numbers and their suffixes skipped) until it returns
// false; returns false then.
template <class F> bool each_identifier(std::string_view text, F&& f) {
    for (std::size_t i = 0; i < text.size();) {
        if (!identifier_char(text[i])) {
            ++i;
            continue;
        }
        std::size_t end = i;
        while (end < text.size() && identifier_char(text[end]))
            ++end;
        if (is_identifier_start(text[i]) && !f(text.substr(i, end - i))) return false;
        i = end;
    }
    return true;
}

bool starts_with(std::string_view name, std::string_view prefix) {
    return name.substr(0, prefix.size()) == prefix;
}

// Something -minimal removes or defines: by its prefix (texture, surface, device runtime, the
// runtime's and driver's types and macros), library_types.h's unprefixed names, the macro it
// defines. Prefixes are matched at the start of a name only (`my_texture` is fine). Called for
// every name of a kernel's source, so by its first letter.
bool removed_name(std::string_view name) {
    if (name.empty()) return false;
    switch (name[0]) {
    case 'c':
        return starts_with(name, "cuda");
    case 'C':
        return starts_with(name, "CU");
    case 't':
        return starts_with(name, "tex");
    case 's':
        return starts_with(name, "surf");
    case 'M':
        return name == "MAJOR_VERSION" || name == "MINOR_VERSION";
    case 'P':
        return name == "PATCH_LEVEL";
    case 'l':
        return name == "libraryPropertyType" || name == "libraryPropertyType_t";
    case '_':
        return name == "__CUDACC_RTC_MINIMAL__";
    default:
        return false;
    }
}

// The compiler's own macros, the same under both front ends.
bool compiler_macro(std::string_view name) {
    static constexpr std::array<std::string_view, 9> kMacros = {
        "defined",    "__CUDA_ARCH__",        "__CUDACC__",           "__CUDACC_RTC__",
        "__NVCC__",   "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDACC_VER_BUILD__",
        "__cplusplus"};
    return std::find(kMacros.begin(), kMacros.end(), name) != kMacros.end();
}

// The name a -D option defines ("-DNAME", "-DNAME=V", "--define-macro=NAME=V"), or "".
std::string_view defined_by_option(std::string_view option) {
    std::string_view rest;
    if (option.substr(0, 2) == "-D")
        rest = option.substr(2);
    else if (option.substr(0, 15) == "--define-macro=")
        rest = option.substr(15);
    else
        return {};
    return rest.substr(0, std::min(rest.find('='), rest.size()));
}

bool options_fit(const std::vector<std::string>& options) {
    // Relocatable code and links, -minimal given, include paths and pre-included headers (text
    // not scanned here), undefined macros.
    constexpr std::array<std::string_view, 9> kMarks = {
        "minimal", "rdc", "relocatable", "-dc", "device-c", "dlto", "dlink", "include", "undef"};
    for (const std::string& option : options) {
        for (std::string_view mark : kMarks)
            if (option.find(mark) != std::string::npos) return false;
        const std::string_view view = option;
        if (view.substr(0, 2) == "-I" || view.substr(0, 2) == "-U") return false;
        if (removed_name(defined_by_option(view))) return false;
    }
    return true;
}

// One pass over the lines: includes, conditionals and names (comments and strings included: a
// false alarm only costs the full front end).
bool source_fits(std::string_view source, const std::vector<std::string>& options) {
    std::set<std::string_view> defined;
    for (const std::string& option : options)
        if (const std::string_view name = defined_by_option(option); !name.empty())
            defined.insert(name);
    for (std::size_t at = 0; at < source.size();) {
        const std::size_t line_end = std::min(source.find('\n', at), source.size());
        const std::string_view line = source.substr(at, line_end - at);
        at = line_end + 1;
        Directive d;
        if (!directive_at(line, 0, d)) {
            // A directive after a comment (`/* */ #include ...`) is one too: not read here.
            if (hidden_directive(line)) return false;
            if (!each_identifier(line, [](std::string_view n) { return !removed_name(n); }))
                return false;
            continue;
        }
        // A directive continued on the next line is more than this check reads.
        if (!line.empty() && line.back() == '\\') return false;
        if (d.word == "include") {
            // Named in quotes or angle brackets (not through a macro), and allowed.
            const std::size_t open = d.rest.find_first_not_of(" \t");
            if (open == std::string_view::npos || (d.rest[open] != '"' && d.rest[open] != '<'))
                return false;
            const std::size_t close = d.rest.find(d.rest[open] == '"' ? '"' : '>', open + 1);
            if (close == std::string_view::npos) return false;
            if (!allowed_include(d.rest.substr(open + 1, close - open - 1))) return false;
            continue;
        }
        if (!each_identifier(d.rest, [](std::string_view n) { return !removed_name(n); }))
            return false;
        if (d.word == "define") {
            std::size_t i = 0;
            while (i < d.rest.size() && (d.rest[i] == ' ' || d.rest[i] == '\t'))
                ++i;
            std::size_t end = i;
            while (end < d.rest.size() && identifier_char(d.rest[end]))
                ++end;
            defined.insert(d.rest.substr(i, end - i));
        } else if (d.word.substr(0, 2) == "if" || d.word.substr(0, 4) == "elif") {
            // A test of a macro the full front end's headers may define reads a difference.
            const bool known = each_identifier(d.rest, [&](std::string_view n) {
                return compiler_macro(n) || defined.count(n) != 0;
            });
            if (!known) return false;
        }
    }
    return true;
}

} // namespace

bool minimal_front_end_fits(std::string_view source,
                            const std::vector<std::string>& nvrtc_options) {
    return options_fit(nvrtc_options) && source.find("<<<") == std::string_view::npos &&
           source_fits(source, nvrtc_options);
}

bool raw_source_fits_minimal_front_end(std::string_view source, const CompileOptions& options) {
    if (!options.link_inputs.empty() || !minimal_front_end_fits(source, options.options))
        return false;
    return std::all_of(options.headers.begin(), options.headers.end(), [&](const Header& h) {
        return minimal_front_end_fits(h.source, options.options);
    });
}

std::shared_ptr<const Program> compile_front_end_fallback(
    const CompileOptions& options, bool minimal,
    const std::function<std::shared_ptr<const Program>(const CompileOptions&)>& compile,
    CompileOptions* used) {
    if (minimal) {
        CompileOptions with = options;
        with.options.emplace_back(kMinimalOption);
        try {
            auto program = compile(with);
            if (used) *used = std::move(with);
            return program;
        } catch (const CompileError&) {
            // Compiled again below with the options as given.
        }
    }
    auto program = compile(options);
    if (used) *used = options;
    return program;
}

} // namespace kiln::detail
