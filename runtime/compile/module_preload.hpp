#pragma once
// Modules loaded before their first call. When Kiln makes a context, it loads there the cubins the
// cache read ahead for this program (the kernels its last processes used; kiln::prepare() read
// them while the driver loaded), and looks up their kernels, which a driver that loads lazily
// loads only then. A kernel's first call adopts the module loaded from the same bytes instead of
// loading them: the driver's module load and function load leave the first call for the context's
// creation (bench/RESULTS.md). A module no call adopts stays loaded for the process.
//
// Off with the read-ahead (KILN_READ_AHEAD=0) or the context priming (KILN_CONTEXT_WARM_UP=0).

#include <cuda.h>

#include <cstddef>
#include <string_view>

namespace kiln::detail {

/// Loads the cubins read ahead into @p context, which is current on this thread and new; those
/// for another architecture are passed over. Best effort.
/// @return how many modules were loaded.
std::size_t preload_read_ahead_modules(CUcontext context) noexcept;

/// The module preloaded in @p context from exactly the bytes of @p image, handed over to the
/// caller (a second call for the same image finds none); nullptr when there is none. Costs an
/// atomic load when nothing is preloaded.
CUmodule take_preloaded_module(CUcontext context, std::string_view image) noexcept;

} // namespace kiln::detail
