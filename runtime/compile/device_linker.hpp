#pragma once
// The link step of relocatable device code: a program compiled with -dc / -rdc=true is linked by
// nvJitLink with the toolkit's device runtime (libcudadevrt.a, which device-side launches need) and
// the caller's link inputs, into one executable cubin. nvJitLink needs no driver, so offline
// compiles (`kiln warm`, `kiln compile`) link as an application run does.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace kiln {
struct LinkInput;
}

namespace kiln::detail {

/// What NVRTC options ask for, read in order (the last spelling wins, as NVRTC reads them).
struct RelocatableMode {
    bool relocatable = false; ///< -dc, --device-c, -rdc=true, --relocatable-device-code=true
    bool lto = false;         ///< -dlto / --dlto: NVRTC writes LTO-IR, nvJitLink links with -lto
};
/// @p options as NVRTC would read them.
RelocatableMode relocatable_mode(const std::vector<std::string>& options);

/// The loaded nvJitLink's identity for cache keys: "13.0+build.<hex build id>", else the version
/// and a hash of the library's path, size and modification time. Computed once per process.
const std::string& nvjitlink_full_version();

/// The toolkit's device runtime: KILN_CUDA_DEVICE_RUNTIME if set; else libcudadevrt.a beside the
/// loaded NVRTC library; else the toolkit Kiln was built against. Read once per process.
struct DeviceRuntime {
    std::filesystem::path path;
    std::string bytes;
    cache::Key content; ///< a hash of the bytes: what cache keys and entries record
};
/// @throws ConfigError when no readable device runtime is found.
const DeviceRuntime& device_runtime();

/// The kind of a link input, from its first bytes; ArgumentError naming @p name for bytes that
/// are none of an archive, an ELF cubin or host object, a fatbin, LTO-IR or PTX text.
cache::LinkInputKind detect_link_input_kind(const std::string& bytes, const std::string& name);

/// What the link takes besides the compiled program.
struct LinkRequest {
    std::string arch;                       ///< "sm_90"
    bool lto = false;                       ///< the program is LTO-IR
    bool lineinfo = false;                  ///< keep line information through an LTO link
    const std::vector<LinkInput>* inputs;   ///< the caller's, in order
    std::vector<std::string> nvrtc_options; ///< for a CompileError
    std::string source;                     ///< for a CompileError
};
/// Link @p program (a relocatable cubin or LTO-IR named @p name) with the caller's inputs and the
/// device runtime; returns the executable cubin and appends nvJitLink's info log to @p log.
/// @throws CompileError with nvJitLink's error log when the link fails.
std::string link_device_code(const std::string& program, const std::string& name,
                             const LinkRequest& request, std::string& log);

} // namespace kiln::detail
