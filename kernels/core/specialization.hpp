#pragma once
// One specialization of a generated kernel, compiled and loaded the same way by every front end:
// through Compiler::global() (the memory and disk caches) with Kiln's device headers in memory, the
// toolkit's headers on the include path (always) and the kernel's extra NVRTC options. A
// CompileError names the kernel and the piece of the user's code at fault (the GeneratedSource's
// pieces), with NVRTC's log and the source attached. Every generated kernel compiles here, with
// the front end's description of it (kernel_description.hpp) for the cache entry's recipe.

#include "kernel_params.hpp"
#include "kiln/compiler.hpp"
#include "kiln/module.hpp"
#include "source_writer.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

struct CompiledSpecialization {
    std::shared_ptr<const Program> program;
    /// What it was compiled with: Module::load recompiles with the same options when the driver
    /// rejects a cubin read from the disk cache.
    CompileOptions options;
    /// The signature of the memo the program came from (specialization_memo.hpp); none when it
    /// was compiled or read by its key.
    std::optional<cache::Key> memo;
};

/// The options every generated kernel compiles with: @p arch, @p nvrtc_options (and -minimal where
/// @p source allows it, minimal_front_end.hpp), Kiln's device headers in memory and the toolkit's
/// on the include path.
CompileOptions specialization_options(std::string_view source,
                                      const std::vector<std::string>& nvrtc_options,
                                      const std::string& arch);

/// Compiles @p generated for @p arch. @p description (kernel_description.hpp) goes into the
/// cache entry's recipe; it is not part of the key. @throws CompileError, naming the piece at
/// fault.
CompiledSpecialization compile_specialization(const KernelParams& params,
                                              const GeneratedSource& generated,
                                              const std::vector<std::string>& nvrtc_options,
                                              const std::string& arch, std::string description);

/// The kernel params.name of @p compiled, loaded in the current context.
Function load_specialization(const KernelParams& params, const CompiledSpecialization& compiled);

} // namespace kiln::detail
