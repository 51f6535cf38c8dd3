#pragma once
// The driver's one-time set-up in a context Kiln creates, paid when Kiln creates it instead of in
// the first kernel call.
//
// In a fresh context the driver's first module load, first function lookup and first launch cost
// about twice what later ones do (on an H200: 49 / 15 / 27 µs against 28 / 9 / 6 µs after an
// unrelated kernel was loaded and launched on the same thread; bench_context_priming in
// bench/RESULTS.md). Whatever kernel a program calls first would pay that. A context is made once
// and costs over 100 ms there; a one-instruction kernel loaded and launched in it costs about
// 0.16 ms more and takes the set-up out of the first call.
//
// KILN_CONTEXT_WARM_UP=0 turns it off.

#include <cuda.h>

namespace kiln::detail {

/// The priming kernel, which does nothing: PTX for the oldest target the driver still compiles,
/// so one text serves every GPU.
inline constexpr char kContextPrimingPtx[] = ".version 6.0\n"
                                             ".target sm_50\n"
                                             ".address_size 64\n"
                                             ".visible .entry kiln_context_priming()\n"
                                             "{\n"
                                             "\tret;\n"
                                             "}\n";
inline constexpr char kContextPrimingKernel[] = "kiln_context_priming";

/// In @p context, which Kiln has just created (no other work can be in it yet): loads a kernel
/// that does nothing from PTX (the driver compiles it for any GPU), launches it on the legacy
/// default stream, waits for it and unloads it, on the calling thread, whose current context is
/// left as it was. Best effort: a step that fails ends the priming, undoes what was done and is
/// logged at debug level; nothing is reported to the caller.
void prime_new_context(CUcontext context) noexcept;

} // namespace kiln::detail
