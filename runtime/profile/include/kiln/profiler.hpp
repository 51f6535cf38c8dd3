#pragma once
/// @file
/// The CUDA profiler's start/stop API, which bounds what Nsight Systems records with
/// `nsys profile --capture-range=cudaProfilerApi` (and Nsight Compute with
/// `--profile-from-start off`).
///
/// @code
/// warm_up();                       // not recorded
/// {
///     kiln::ProfilerRange capture; // nsys starts recording here...
///     run_steps();
/// }                                // ...and stops here
/// @endcode

namespace kiln {

/// cuProfilerStart in the current context (device 0's primary context if none is current).
/// Without a profiler attached it does nothing. @throws NoDeviceError, CudaError.
void profiler_start();
/// cuProfilerStop in the current context. @throws NoDeviceError, CudaError.
void profiler_stop();

/// profiler_start() for the lifetime of the object, profiler_stop() at its end (CuPy's
/// `cupyx.profiler.profile`). Not movable.
class ProfilerRange {
  public:
    /// Calls profiler_start(). @throws NoDeviceError, CudaError.
    ProfilerRange() { profiler_start(); }
    /// Calls profiler_stop(). Never throws: a failure to stop is logged.
    ~ProfilerRange();
    /// Not copyable: the range stops once.
    ProfilerRange(const ProfilerRange&) = delete;
    /// Not copyable.
    ProfilerRange& operator=(const ProfilerRange&) = delete;
};

} // namespace kiln
