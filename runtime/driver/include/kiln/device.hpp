#pragma once
/// @file
/// CUDA devices and their primary contexts. Most programs never name a device: Kiln uses the
/// calling thread's current context, or device 0's primary context when there is none. Device
/// answers what the hardware is (its architecture for NVRTC, its limits for launches) and whether
/// there is one at all (available()).

#include <cuda.h>

#include <string>

namespace kiln {

/// A CUDA device. Kiln works in the device's primary context, the one the CUDA runtime (and so
/// CuPy, PyTorch...) uses, so pointers and streams pass freely between them and Kiln.
class Device {
  public:
    /// Device @p ordinal (as CUDA_VISIBLE_DEVICES numbers them).
    /// @param ordinal from 0 to count() - 1.
    /// @throws NoDeviceError, CudaError.
    explicit Device(int ordinal);

    /// The device of the calling thread's current context; with none current, device 0, whose
    /// primary context is then made current.
    /// @return the device.
    /// @throws NoDeviceError without a driver or device.
    static Device current();
    /// How many devices the driver sees.
    /// @return the count, 0 or more.
    /// @throws NoDeviceError without a driver.
    static int count();
    /// Whether a driver and at least one device are usable; never throws. @p reason says why not.
    /// @param reason where to put the reason when there is none; may be null.
    /// @return true when device calls can work.
    static bool available(std::string* reason = nullptr);

    /// The ordinal.
    /// @return the ordinal, as CUDA_VISIBLE_DEVICES numbers devices.
    int ordinal() const noexcept { return m_ordinal; }
    /// The driver handle.
    /// @return the driver handle.
    CUdevice handle() const noexcept { return m_device; }
    /// The product name.
    /// @return the product name, e.g. "NVIDIA H100 80GB HBM3".
    /// @throws CudaError.
    std::string name() const;
    /// A device attribute, as cuDeviceGetAttribute gives it.
    /// @param attribute the attribute, e.g. CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK.
    /// @return its value.
    /// @throws CudaError.
    int attribute(CUdevice_attribute attribute) const;
    /// The major compute capability.
    /// @return the major compute capability, e.g. 9 for sm_90.
    /// @throws CudaError.
    int compute_capability_major() const;
    /// The minor compute capability.
    /// @return the minor compute capability, e.g. 0 for sm_90.
    /// @throws CudaError.
    int compute_capability_minor() const;
    /// The NVRTC target for this device.
    /// @return the NVRTC target for this device, e.g. "sm_90".
    /// @throws CudaError.
    std::string arch() const;
    /// The device memory in bytes.
    /// @return the device memory in bytes.
    /// @throws CudaError.
    std::size_t total_memory() const;
    /// How many streaming multiprocessors the device has.
    /// @return how many streaming multiprocessors the device has.
    /// @throws CudaError.
    int multiprocessor_count() const;

    /// Retain this device's primary context and make it current on the calling thread.
    /// @throws CudaError.
    void make_current() const;
    /// Wait for all work on this device (its primary context).
    /// @throws CudaError, including errors of earlier asynchronous work.
    void synchronize() const;

  private:
    int m_ordinal;
    CUdevice m_device;
};

namespace detail {
/// The calling thread's current context, making device 0's primary context current if there is
/// none; an application's context also gets Kiln's reference to its device's primary context.
/// The fast path, on every launch, is one cuCtxGetCurrent and a thread-local comparison; inside a
/// front end's call (a CallContextScope) the first answer is kept, and later ones cost nothing.
CUcontext current_context();
/// The calling thread's current context, or null when it has none; makes none current and never
/// throws. Inside a CallContextScope, the context already known is answered without the driver.
CUcontext current_context_or_null() noexcept;
/// Kiln made @p context current on the calling thread (null: none, or not known): a call in
/// progress keeps it as the context it knows. Every cuCtxSetCurrent of Kiln's reports here.
void note_current_context(CUcontext context) noexcept;
/// Code outside Kiln ran (an application's allocator) and may have changed the current context:
/// the next question asks the driver again.
void forget_current_context() noexcept;
/// For the length of one call from a front end, the calling thread's current context is asked of
/// the driver once and kept: the device check, the allocation of outputs and the launch share the
/// answer. Kiln's own context switches inside the scope keep it up to date (note_current_context);
/// scopes nest. Not for code that runs an application's callbacks in between.
class CallContextScope {
  public:
    CallContextScope() noexcept;
    ~CallContextScope();
    CallContextScope(const CallContextScope&) = delete;
    CallContextScope& operator=(const CallContextScope&) = delete;
};
/// The ordinal of the device of the calling thread's current context (making device 0's primary
/// context current if there is none). One cuCtxGetCurrent and a thread-local comparison after the
/// first call per thread and context (none inside a CallContextScope once the context is known).
int current_device_ordinal();
/// Device @p ordinal's primary context, retained once for the process (not made current).
/// @throws ArgumentError for an ordinal out of range; NoDeviceError, CudaError.
CUcontext primary_context(int ordinal);
/// Wait for the work of the current context and of every device whose primary context Kiln has
/// used. @throws CudaError, including errors of earlier asynchronous work.
void synchronize_devices();
/// How many devices the driver sees, asked once per process; 0 without a driver. Never throws.
int visible_device_count() noexcept;
} // namespace detail

} // namespace kiln
