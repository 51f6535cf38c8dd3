#pragma once
// The calls driver/ makes to the layers above it, as hooks those layers register, so that driver/
// knows nothing above it (docs/architecture.md):
//
//   context made   compile/ (context_priming.cpp): the driver's one-time set-up in a context Kiln
//                  has just made, registered where modules load, so any program that launches a
//                  kernel has it
//   stream made / stream ending
//                  memory/ (block_cache.cpp): the blocks kept for a kiln::Stream go back before
//                  it is destroyed; registered with the block cache, which only holds blocks when
//                  memory/ is linked
//   capture ended  memory/ (capture_frees.cpp): blocks made before a kiln::Graph::capture and
//                  dropped inside it go back to the pool once it has ended
//   launch happened
//                  profile/ (activity.cpp): see activity_hook.hpp
//
// A hook is one function pointer, constant-initialized, so registering from a static initializer
// is safe whatever the order; an unregistered hook does nothing.

#include <cuda.h>

namespace kiln::detail {

using ContextHook = void (*)(CUcontext) noexcept;
using StreamHook = void (*)(CUstream) noexcept;

/// compile/ registers the context priming.
void set_context_made_hook(ContextHook hook) noexcept;
/// Kiln has made @p context (a primary context that was inactive): nothing is in it yet.
void context_made(CUcontext context) noexcept;

/// memory/ registers what a kiln::Stream's life means to the block cache.
void set_stream_hooks(StreamHook made, StreamHook ending) noexcept;
/// Kiln created @p stream.
void stream_made(CUstream stream) noexcept;
/// @p stream, one of stream_made(), is about to be destroyed.
void stream_ending(CUstream stream) noexcept;

/// memory/ registers what the end of a capture means to the blocks it set aside.
void set_capture_ended_hook(StreamHook hook) noexcept;
/// Graph::capture has ended (or abandoned) its capture of @p stream.
void capture_ended(CUstream stream) noexcept;

} // namespace kiln::detail
