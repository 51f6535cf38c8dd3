#pragma once
/// @file
/// What produced a cache entry: enough to compile the same kernel again, for another architecture
/// or to check an entry, without the application that made it. Bytes only; the runtime turns a
/// recipe back into compile options (kiln/compiler.hpp: options_from_recipe()).

#include <string>
#include <utility>
#include <vector>

namespace kiln::cache {

/// The inputs of one NVRTC compile, as the caller gave them (headers and name expressions in the
/// order the key sees them). Kiln's own default options are not recorded: they follow from the
/// Kiln that compiles the recipe again, as they would for the application itself, so the
/// recompiled key is the one the application asks for.
struct Recipe {
    /// The CUDA source, whole.
    std::string source;
    /// The caller's NVRTC options, in the order given (not Kiln's defaults, not `-arch`).
    std::vector<std::string> options;
    /// Headers handed to NVRTC in memory: (name, content); the compiler records them sorted by
    /// name.
    std::vector<std::pair<std::string, std::string>> headers;
    /// C++ names whose lowered names were asked for; the compiler records them sorted, each once.
    std::vector<std::string> name_expressions;
    /// The toolkit's headers were includable (CompileOptions::cuda_headers).
    bool cuda_headers = true;
    /// `-lineinfo` was on, as resolved (the option, else KILN_LINEINFO).
    bool lineinfo = true;
    /// The NVRTC program name. With `-lineinfo` the cubin embeds it, so a check that compiles the
    /// recipe again must use it to get the same bytes.
    std::string program_name;
    /// The front end's description of the kernel (JSON text; empty for source the user wrote).
    std::string description;

    /// Field by field.
    /// @param a, b the recipes to compare.
    /// @return whether every field is equal.
    friend bool operator==(const Recipe& a, const Recipe& b) {
        return a.source == b.source && a.options == b.options && a.headers == b.headers &&
               a.name_expressions == b.name_expressions && a.cuda_headers == b.cuda_headers &&
               a.lineinfo == b.lineinfo && a.program_name == b.program_name &&
               a.description == b.description;
    }
    /// Field by field.
    /// @param a, b the recipes to compare.
    /// @return whether some field differs.
    friend bool operator!=(const Recipe& a, const Recipe& b) { return !(a == b); }
};

} // namespace kiln::cache
