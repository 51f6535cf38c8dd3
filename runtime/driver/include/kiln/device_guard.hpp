#pragma once
/// @file
/// kiln::DeviceGuard: run a block of code on one device. Kiln works in the calling thread's
/// current context; a guard makes a device's primary context current for its lifetime and puts
/// back whatever was current before, so several threads can each drive their own GPU, and one
/// thread can visit several. docs/multi-gpu.md shows it in use.

#include "kiln/device.hpp"

#include <cuda.h>

#include <optional>

namespace kiln {

/// Makes a device's primary context current on the calling thread and, when destroyed, restores
/// the context that was current before (none included). Per thread: nothing global changes, so
/// guards on different threads never interfere. Guards nest; destroy them in reverse order, on the
/// thread that made them.
/// @code
/// {
///     kiln::DeviceGuard on(kiln::Device(1));
///     kiln::Array x = kiln::zeros({1024}, kiln::DType::float32); // on GPU 1
/// } // the previous context is current again
/// @endcode
class DeviceGuard {
  public:
    /// Make @p device's primary context current.
    /// @param device the device.
    /// @throws NoDeviceError without a driver; CudaError.
    explicit DeviceGuard(const Device& device);
    /// Make device @p ordinal's primary context current.
    /// @param ordinal from 0 to Device::count() - 1.
    /// @throws ArgumentError for an ordinal out of range; NoDeviceError without a driver;
    /// CudaError.
    explicit DeviceGuard(int ordinal);
    /// Restores the previous context; never throws.
    ~DeviceGuard();
    /// Not copyable: one restore per guard.
    DeviceGuard(const DeviceGuard&) = delete;
    /// Not copyable.
    DeviceGuard& operator=(const DeviceGuard&) = delete;
    /// Not movable: a guard belongs to its scope and thread.
    DeviceGuard(DeviceGuard&&) = delete;
    /// Not movable.
    DeviceGuard& operator=(DeviceGuard&&) = delete;

    /// The device the guard made current.
    /// @return its ordinal.
    int ordinal() const noexcept { return m_ordinal; }

  private:
    CUcontext m_previous = nullptr;
    CUcontext m_context = nullptr;
    int m_ordinal = 0;
};

namespace detail {
/// A DeviceGuard for @p ordinal when it is 0 or more; nothing for a negative one (the current
/// context stays). What the front ends do with CallOptions::device and LaunchConfig::device.
class DeviceScope {
  public:
    explicit DeviceScope(int ordinal) {
        if (ordinal >= 0) m_guard.emplace(ordinal);
    }

  private:
    std::optional<DeviceGuard> m_guard;
};

/// The start of a generated front end's call: its device (DeviceScope) and, for the whole call,
/// the current context asked of the driver once (CallContextScope) and shared by the device check,
/// the outputs' allocation and the launch. A RawKernel launch asks once anyway and uses only the
/// DeviceScope.
class CallScope {
  public:
    explicit CallScope(int ordinal)
        : m_device(ordinal) {}

  private:
    CallContextScope m_call; // first: it outlives the guard, which puts the previous context back
    DeviceScope m_device;
};

/// Device @p ordinal's primary context current for a scope, unless the current context is on that
/// device already (an application's own context there stays current, with its streams). For a
/// negative ordinal (a device not known), the current context stays, as current_context() makes
/// sure there is one.
class OnDevice {
  public:
    explicit OnDevice(int ordinal)
        : m_scope(ordinal >= 0 && current_device_ordinal() != ordinal ? ordinal : -1) {
        if (ordinal < 0) current_context();
    }

  private:
    DeviceScope m_scope;
};

/// Makes @p context current for a scope when another one is (null: leaves the thread as it is),
/// and restores the previous one. Never throws: for destructors that free memory in the context
/// it came from (stream-ordered frees go on that context's streams).
class InContext {
  public:
    explicit InContext(CUcontext context) noexcept;
    ~InContext();
    InContext(const InContext&) = delete;
    InContext& operator=(const InContext&) = delete;
    /// Whether @p context is current in the scope (false: null, no driver, or the switch failed).
    bool active() const noexcept { return m_active; }

  private:
    CUcontext m_previous = nullptr;
    bool m_switched = false, m_active = false;
};
} // namespace detail

} // namespace kiln
