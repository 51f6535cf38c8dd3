#include "recipe_sandbox.hpp"

#include "cuda_include.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>
#include <vector>

namespace kiln::detail {

namespace {

// The text as the preprocessor sees its directives: line splices joined, comments gone (string
// and character literals kept, so a "//" inside one is no comment).
std::string without_comments(std::string_view text) {
    std::string joined;
    joined.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '\n') {
            ++i;
            continue;
        }
        if (text[i] == '\\' && i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') {
            i += 2;
            continue;
        }
        joined += text[i];
    }
    std::string out;
    out.reserve(joined.size());
    char quote = 0;
    for (std::size_t i = 0; i < joined.size(); ++i) {
        const char c = joined[i];
        if (quote) {
            out += c;
            if (c == '\\' && i + 1 < joined.size())
                out += joined[++i];
            else if (c == quote || c == '\n')
                quote = 0;
        } else if (c == '"' || c == '\'') {
            quote = c;
            out += c;
        } else if (c == '/' && i + 1 < joined.size() && joined[i + 1] == '/') {
            while (i < joined.size() && joined[i] != '\n')
                ++i;
            out += '\n';
        } else if (c == '/' && i + 1 < joined.size() && joined[i + 1] == '*') {
            i += 2;
            while (i + 1 < joined.size() && !(joined[i] == '*' && joined[i + 1] == '/')) {
                if (joined[i] == '\n') out += '\n';
                ++i;
            }
            ++i;
            out += ' ';
        } else {
            out += c;
        }
    }
    return out;
}

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

struct Include {
    std::string name;
    bool quoted = false;
    bool plain = true; ///< a "name" or <name> (not computed by a macro)
};

// Every #include (and #include_next, #import) directive of @p text.
std::vector<Include> includes_of(std::string_view source) {
    const std::string text = without_comments(source);
    std::vector<Include> found;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string_view line(text.data() + start, end - start);
        start = end + 1;
        std::size_t i = 0;
        while (i < line.size() && is_space(line[i]))
            ++i;
        if (line.substr(i, 1) == "#") {
            i += 1;
        } else if (line.substr(i, 2) == "%:") {
            i += 2; // the digraph of '#'
        } else {
            continue;
        }
        while (i < line.size() && is_space(line[i]))
            ++i;
        std::size_t word = i;
        while (word < line.size() &&
               (std::isalnum(static_cast<unsigned char>(line[word])) || line[word] == '_'))
            ++word;
        const std::string_view directive = line.substr(i, word - i);
        if (directive != "include" && directive != "include_next" && directive != "import")
            continue;
        i = word;
        while (i < line.size() && is_space(line[i]))
            ++i;
        Include inc;
        const char open = i < line.size() ? line[i] : '\0';
        const char close = open == '"' ? '"' : open == '<' ? '>' : '\0';
        const std::size_t stop = close ? line.find(close, i + 1) : std::string_view::npos;
        if (!close || stop == std::string_view::npos) {
            inc.plain = false;
            inc.name = std::string(line.substr(i));
        } else {
            inc.name = std::string(line.substr(i + 1, stop - i - 1));
            inc.quoted = open == '"';
        }
        found.push_back(std::move(inc));
    }
    return found;
}

bool has_dot_dot(const std::filesystem::path& path) {
    return std::any_of(path.begin(), path.end(), [](const auto& part) { return part == ".."; });
}

bool exists_in(const std::filesystem::path& dir, const std::string& name) {
    std::error_code ec;
    return !dir.empty() && std::filesystem::is_regular_file(dir / name, ec);
}

// The folder NVRTC takes @p name (a program name or an in-memory header's) to be in: a relative
// name is in the working directory (an empty program name too: Compiler::reproduce() then
// names the program kiln_<key>.cu).
std::filesystem::path folder_of(const std::string& name) {
    std::error_code ec;
    const std::filesystem::path folder = std::filesystem::path(name).parent_path();
    const auto absolute = std::filesystem::absolute(folder.empty() ? "." : folder, ec);
    return ec ? std::filesystem::path() : absolute.lexically_normal();
}

// Why @p inc, in @p recipe's source or (@p header not null) in that header of it, may read a file
// that is neither one of its headers nor the toolkit's.
std::string include_refusal(const cache::Recipe& recipe, const Include& inc,
                            const std::string* header) {
    const std::string shown = inc.quoted ? "\"" + inc.name + "\"" : "<" + inc.name + ">";
    if (!inc.plain)
        return "an #include that a macro computes (" + inc.name + "): it could name any file";
    const std::filesystem::path path(inc.name);
    if (inc.name.empty() || path.is_absolute() || has_dot_dot(path))
        return "#include " + shown + " names a file outside its headers and the toolkit's";
    const bool own = std::any_of(recipe.headers.begin(), recipe.headers.end(),
                                 [&](const auto& header) { return header.first == inc.name; });
    if (own) return {};
    const std::filesystem::path toolkit = cuda_include_dir();
    const bool in_toolkit = recipe.cuda_headers &&
                            (exists_in(toolkit, inc.name) || exists_in(toolkit / "cccl", inc.name));
    if (!in_toolkit)
        return "#include " + shown + " is neither one of its headers nor the toolkit's";
    if (!inc.quoted) return {};
    // A quoted name is looked for beside the file that includes it first: a file there would be
    // read instead of the toolkit's. The program is where its name says; an in-memory header is
    // where NVRTC places it, <working directory>/<name>.
    if (exists_in(folder_of(recipe.program_name), inc.name))
        return "#include " + shown + " would read a file beside its program name " +
               recipe.program_name + " instead of the toolkit's";
    if (header && exists_in(folder_of(*header), inc.name))
        return "#include " + shown + " would read a file beside " + *header +
               " in the working directory, where NVRTC places the header, instead of the "
               "toolkit's";
    return {};
}

} // namespace

std::string recipe_sandbox_refusal(const cache::Recipe& recipe) {
    for (const auto& option : recipe.options) {
        std::string_view name = option;
        for (const std::string_view bad :
             {"-I", "--include-path", "-include", "--pre-include", "-isystem", "-iquote"})
            if (name.substr(0, bad.size()) == bad)
                return "its recipe has the option '" + option +
                       "', which makes NVRTC read files outside its headers and the toolkit's";
    }
    for (const auto& inc : includes_of(recipe.source))
        if (std::string why = include_refusal(recipe, inc, nullptr); !why.empty())
            return "its source's " + why;
    for (const auto& [header, content] : recipe.headers)
        for (const auto& inc : includes_of(content))
            if (std::string why = include_refusal(recipe, inc, &header); !why.empty())
                return "its header " + header + "'s " + why;
    return {};
}

} // namespace kiln::detail
