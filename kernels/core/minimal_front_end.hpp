#pragma once
// Whether a kernel compiles with NVRTC's -minimal: a front end that leaves out texture and surface
// functions, the device runtime (cudadevrt) and kernel launch from device code, and the runtime's
// and driver's types and macros (cudaError_t, cudaTextureObject_t, CUuuid, CUDA_IPC_HANDLE_SIZE,
// library_types.h's MAJOR_VERSION, ...). It saves about 8 ms of every compile's front end on a
// 2-core machine and gives the same cubin, byte for byte, for every kernel that does not need what
// it removes. That is decided from the source and options alone (so a recipe's replay decides the
// same), and conservatively: any doubt keeps the full front end. A compile that still fails with
// -minimal is compiled again without it (compile_front_end_fallback()), so a kernel the check
// passes by mistake costs a compile, never an error.

#include "kiln/compiler.hpp"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// The NVRTC option, added to a kernel's options when minimal_front_end_fits().
inline constexpr std::string_view kMinimalOption = "-minimal";

/// True when @p source, compiled with @p nvrtc_options, needs nothing -minimal removes and reads
/// nothing it could tell apart:
/// - it includes only Kiln's device headers and the 16-bit float headers;
/// - it names no identifier that begins with `cuda`, `CU`, `tex` or `surf`, none of
///   library_types.h's (`MAJOR_VERSION`, `libraryPropertyType`, ...) and not the macro -minimal
///   defines (`__CUDACC_RTC_MINIMAL__`);
/// - its `#if` / `#ifdef` / `#elif` lines test only the compiler's own macros (`__CUDA_ARCH__`,
///   `__CUDACC__`, ...) and macros the source or a -D option defines;
/// - it launches no kernel (`<<<`);
/// - the options ask for neither relocatable device code nor -minimal themselves, add no include
///   path or pre-included header, and undefine no macro.
bool minimal_front_end_fits(std::string_view source, const std::vector<std::string>& nvrtc_options);

/// The same for a RawModule's source with its options: also every in-memory header it is given
/// fits (their text is compiled too), and it links nothing.
bool raw_source_fits_minimal_front_end(std::string_view source, const CompileOptions& options);

/// Compiles through @p compile with @p options plus -minimal when @p minimal, and again with
/// @p options alone when that fails (a kernel the check passed by mistake, or the user's own
/// error, which is then reported from the full front end as NVRTC alone would report it). Sets
/// @p used to the options of the program returned.
std::shared_ptr<const Program> compile_front_end_fallback(
    const CompileOptions& options, bool minimal,
    const std::function<std::shared_ptr<const Program>(const CompileOptions&)>& compile,
    CompileOptions* used = nullptr);

} // namespace kiln::detail
