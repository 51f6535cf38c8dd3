#pragma once
// A stream Kiln owns in each context, where memory is freed whose own stream may end without Kiln
// seeing it (a program's stream, passed as a StreamRef, which the program may destroy at any
// time): the free waits there for an event recorded on the memory's stream while that stream was
// known to exist, so it is ordered after every use of the memory and never touches a handle that
// may be gone. Made on first use, non-blocking (it never waits for the legacy stream's work), and
// never destroyed, like the primary contexts Kiln holds; the block cache counts it as a stream of
// Kiln's own.

#include <cuda.h>

namespace kiln::detail {

/// The release stream of @p context, made on first use.
/// @throws CudaError, NoDeviceError.
CUstream release_stream(CUcontext context);

/// Frees @p pointer, stream-ordered memory of @p context, once the work @p event captured is
/// done, without blocking the host: cuStreamWaitEvent, then cuMemFreeAsync, on the release stream.
/// @p event may be recorded again or destroyed as soon as this returns (a wait uses the record
/// current when it is queued). Never throws: where there is no release stream, it waits for the
/// event on the host and frees on the context's legacy stream.
void free_after_event(CUcontext context, CUdeviceptr pointer, CUevent event) noexcept;

} // namespace kiln::detail
