#include "specialization.hpp"

#include "device_headers.hpp"
#include "kiln/error.hpp"
#include "minimal_front_end.hpp"

#include <cstdlib>
#include <utility>

namespace kiln::detail {

namespace {

// "<who> does not compile: <the piece> '<code>' is at fault (<note>): <NVRTC's first error>",
// the error as NVRTC writes it ("<file>(LINE): error: ..."). The piece is named when that error
// is in the generated source itself, not in a header it includes.
std::string summary(const KernelParams& params, const GeneratedSource& generated,
                    const std::string& log) {
    std::string summary = params.who + " does not compile";
    const std::string first = first_compile_error(log);
    if (first.empty()) return summary;
    const std::size_t close = first.find("): ");
    const std::size_t open = close == std::string::npos ? close : first.rfind('(', close);
    // NVRTC ends its log with: N errors detected in the compilation of "<program>".
    const std::string compiling = "in the compilation of \"";
    const bool in_program =
        open != std::string::npos &&
        (log.find(compiling) == std::string::npos ||
         log.find(compiling + first.substr(0, open) + '"') != std::string::npos);
    const SourcePiece* piece =
        in_program ? generated.piece_at(std::atoi(first.c_str() + open + 1)) : nullptr;
    if (piece) {
        summary += ": " + std::string(piece->what);
        if (!piece->quoted.empty()) summary += " '" + piece->quoted + "'";
        summary += " is at fault";
        if (!piece->note.empty()) summary += " (" + piece->note + ")";
    }
    return summary + ": " + first;
}

// specialization_options() less the front end's choice.
CompileOptions full_front_end_options(const std::vector<std::string>& nvrtc_options,
                                      const std::string& arch) {
    CompileOptions options;
    options.arch = arch;
    options.options = nvrtc_options;
    options.headers = device_headers();
    // The toolkit's headers are always on the include path, for every front end and any user
    // code (a preamble may include <cooperative_groups.h>): the path costs nothing, only an
    // #include does, and the generated head includes only what the kernel mentions.
    options.cuda_headers = true;
    return options;
}

} // namespace

// Source that includes one of CuPy's headers (`#include <cupy/complex.cuh>`, in a RawModule or a
// preamble) gets Kiln's versions of them, and Kiln's device headers they build on; a header of the
// user's own by the same name wins. Only then, so other programs' keys do not change with them.
void add_cupy_headers(std::string_view source, CompileOptions& options) {
    if (source.find("cupy/") == std::string_view::npos) return;
    for (const auto* set : {&cupy_headers(), &device_headers()})
        for (const Header& header : *set) {
            bool taken = false;
            for (const Header& own : options.headers)
                taken = taken || own.name == header.name;
            if (!taken) options.headers.push_back(header);
        }
}

CompileOptions specialization_options(std::string_view source,
                                      const std::vector<std::string>& nvrtc_options,
                                      const std::string& arch) {
    CompileOptions options = full_front_end_options(nvrtc_options, arch);
    add_cupy_headers(source, options);
    // NVRTC's smaller front end where the kernel needs nothing it leaves out (the same cubin).
    if (minimal_front_end_fits(source, nvrtc_options)) options.options.emplace_back(kMinimalOption);
    return options;
}

CompiledSpecialization compile_specialization(const KernelParams& params,
                                              const GeneratedSource& generated,
                                              const std::vector<std::string>& nvrtc_options,
                                              const std::string& arch, std::string description) {
    CompileOptions options = full_front_end_options(nvrtc_options, arch);
    add_cupy_headers(generated.source, options);
    options.description = std::move(description);
    CompiledSpecialization compiled;
    try {
        compiled.program = compile_front_end_fallback(
            options, minimal_front_end_fits(generated.source, nvrtc_options),
            [&](const CompileOptions& o) {
                return Compiler::global().compile(generated.source, o);
            },
            &compiled.options);
        return compiled;
    } catch (const CompileError& e) {
        throw CompileError(summary(params, generated, e.log()), e.log(), e.options(), e.source());
    }
}

Function load_specialization(const KernelParams& params, const CompiledSpecialization& compiled) {
    return Module::load(compiled.program, compiled.options)->function(params.name);
}

} // namespace kiln::detail
