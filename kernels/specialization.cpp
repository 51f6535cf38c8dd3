#include "specialization.hpp"

#include "device_headers.hpp"
#include "kiln/error.hpp"

#include <cstdlib>
#include <utility>

namespace kiln::detail {

namespace {

// "<who> does not compile: <the piece> '<code>' is at fault (<note>): <NVRTC's first error>".
// NVRTC reports errors as "<program>(LINE): error: ...".
std::string summary(const KernelParams& params, const GeneratedSource& generated,
                    const std::string& log) {
    std::string summary = params.who + " does not compile";
    const std::size_t at = log.find("): error");
    if (at == std::string::npos) return summary;
    const std::size_t open = log.rfind('(', at);
    const SourcePiece* piece =
        open == std::string::npos ? nullptr : generated.piece_at(std::atoi(log.c_str() + open + 1));
    if (piece) {
        summary += ": " + std::string(piece->what);
        if (!piece->quoted.empty()) summary += " '" + piece->quoted + "'";
        summary += " is at fault";
        if (!piece->note.empty()) summary += " (" + piece->note + ")";
    }
    const std::size_t end = log.find('\n', at);
    return summary + ": " + log.substr(at + 3, end == std::string::npos ? end : end - at - 3);
}

} // namespace

CompiledSpecialization compile_specialization(const KernelParams& params,
                                              const GeneratedSource& generated,
                                              const std::vector<std::string>& nvrtc_options,
                                              const std::string& arch, std::string description) {
    CompileOptions options;
    options.arch = arch;
    options.description = std::move(description);
    options.options = nvrtc_options;
    options.headers = device_headers();
    // The toolkit's headers are always on the include path, for every front end and any user
    // code (a preamble may include <cooperative_groups.h>): the path costs nothing, only an
    // #include does, and the generated head includes only what the kernel mentions.
    options.cuda_headers = true;
    try {
        auto program = Compiler::global().compile(generated.source, options);
        return {std::move(program), std::move(options)};
    } catch (const CompileError& e) {
        throw CompileError(summary(params, generated, e.log()), e.log(), e.options(), e.source());
    }
}

Function load_specialization(const KernelParams& params, const CompiledSpecialization& compiled) {
    return Module::load(compiled.program, compiled.options)->function(params.name);
}

} // namespace kiln::detail
