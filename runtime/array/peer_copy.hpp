#pragma once
// Copies between devices (kiln::copy, Array::copy_to) and what the per-call device checks ask of
// an array's memory. The routes are here by name so that tests on one GPU can force each.

#include "kiln/array.hpp"
#include "kiln/stream.hpp"

#include <cuda.h>

namespace kiln::detail {

/// How kiln::copy moves the bytes.
enum class CopyRoute {
    same_device, ///< cuMemcpyDtoDAsync
    peer,        ///< cuMemcpyPeerAsync, with peer access enabled between the two devices
    staged,      ///< device to pinned host memory to device, in chunks
};

/// The device the driver says @p pointer is on; -1 for address 0, managed memory (usable from
/// every device) or memory the driver does not know. @throws NoDeviceError without a driver.
int pointer_device(CUdeviceptr pointer);

/// The device an operand's memory is on, as far as a call needs to know: the recorded one; for an
/// array wrapped without one, the driver's answer where several devices are visible; -1 (nothing
/// to compare) where there is only one, or no driver.
int operand_device(const Array& array);

/// Whether device @p dst can read and write device @p src's memory directly; the first call for a
/// pair asks the driver and enables peer access (cuCtxEnablePeerAccess), later calls remember.
/// True for one device.
bool peer_access(int dst, int src);

/// The route kiln::copy takes between arrays on @p dst and @p src (-1: not known, taken as one
/// device).
CopyRoute copy_route(int dst, int src);

/// kiln::copy along @p route, whatever the devices allow: every route gives the same result (peer
/// falls back to the driver's own staging where peer access is off).
void copy_via(CopyRoute route, const Array& dst, const Array& src, StreamRef stream);

} // namespace kiln::detail
