#pragma once
/// @file
/// CUDA devices and their primary contexts.

#include <cuda.h>

#include <string>

namespace kiln {

/// A CUDA device. Kiln works in the device's primary context, the one the CUDA runtime (and so
/// CuPy, PyTorch...) uses, so pointers and streams pass freely between them and Kiln.
class Device {
  public:
    /// Device @p ordinal (as CUDA_VISIBLE_DEVICES numbers them). @throws NoDeviceError, CudaError.
    explicit Device(int ordinal);

    /// The device of the calling thread's current context; with none current, device 0, whose
    /// primary context is then made current. @throws NoDeviceError without a driver or device.
    static Device current();
    /// How many devices the driver sees. @throws NoDeviceError without a driver.
    static int count();
    /// Whether a driver and at least one device are usable; never throws. @p reason says why not.
    static bool available(std::string* reason = nullptr);

    int ordinal() const noexcept { return m_ordinal; }
    CUdevice handle() const noexcept { return m_device; }
    std::string name() const;
    int attribute(CUdevice_attribute attribute) const;
    int compute_capability_major() const;
    int compute_capability_minor() const;
    /// The NVRTC target for this device, e.g. "sm_90".
    std::string arch() const;
    std::size_t total_memory() const;
    int multiprocessor_count() const;

    /// Retain this device's primary context and make it current on the calling thread.
    void make_current() const;
    /// Wait for all work on this device (its primary context).
    void synchronize() const;

  private:
    int m_ordinal;
    CUdevice m_device;
};

namespace detail {
/// The calling thread's current context, making device 0's primary context current if there is
/// none; an application's context also gets Kiln's reference to its device's primary context.
/// The fast path, on every launch, is one cuCtxGetCurrent and a thread-local comparison.
CUcontext current_context();
} // namespace detail

} // namespace kiln
