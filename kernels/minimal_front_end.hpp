#pragma once
// Whether a generated kernel compiles with NVRTC's -minimal: a front end that leaves out texture
// and surface functions, the device runtime (cudadevrt) and kernel launch from device code, and the
// runtime's and driver's types and macros (cudaError_t, cudaTextureObject_t, ...). It saves about
// 8 ms of every compile's front end on a 2-core machine and gives the same cubin, byte for byte,
// for every kernel that does not need what it removes. That is decided from the source alone
// (so a recipe's replay decides the same), and conservatively: any doubt keeps the full front end.

#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// The NVRTC option, added to a generated kernel's options when minimal_front_end_fits().
inline constexpr std::string_view kMinimalOption = "-minimal";

/// True when @p source, compiled with @p nvrtc_options, needs nothing -minimal removes: it
/// includes only Kiln's device headers and the 16-bit float headers; it names no identifier that
/// begins with `cuda`, `tex` or `surf`; it launches no kernel (`<<<`); and the options ask for
/// neither relocatable device code nor -minimal themselves.
bool minimal_front_end_fits(std::string_view source, const std::vector<std::string>& nvrtc_options);

} // namespace kiln::detail
