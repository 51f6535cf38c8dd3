#pragma once
/// @file
/// kiln::benchmark: CuPy's `cupyx.profiler.benchmark` in C++. Times a callable on the host clock
/// and with CUDA events, repeat after repeat, and prints CuPy's one-line summary.
///
/// @code
/// kiln::BenchmarkOptions options;
/// options.name = "saxpy";
/// options.n_repeat = 1000;
/// auto result = kiln::benchmark([&] { saxpy({blocks}, {256}, a, x, y, out, n); }, options);
/// std::cout << result << '\n';
/// // saxpy               :    CPU:    3.216 us   +/- 0.402 (min:    2.900 / max:    9.100) us
/// //     GPU-0:    6.144 us   +/- 0.310 (min:    5.120 / max:    8.192) us
/// @endcode

#include "kiln/statistics.hpp"
#include "kiln/stream.hpp"

#include <iosfwd>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

/// A device kiln::benchmark takes GPU times on, and the stream its events go on there.
struct BenchmarkDevice {
    /// The device's ordinal.
    int device = 0;
    /// A stream of that device (its legacy default stream when omitted) that the callable's work
    /// there is queued on or ordered with.
    StreamRef stream;
};

/// The GPU times of one device.
struct DeviceTimes {
    /// The device's ordinal.
    int device = 0;
    /// One time per repeat, in seconds.
    std::vector<double> times;
};

/// How kiln::benchmark repeats and names a measurement. Defaults are CuPy's.
struct BenchmarkOptions {
    /// Timed calls; at least 1.
    int n_repeat = 10000;
    /// Untimed calls made first (compilation, caches, clocks); at least 0.
    int n_warmup = 10;
    /// Seconds after which the timed calls stop early; the result holds the repeats made so far
    /// (always at least one).
    double max_duration = std::numeric_limits<double>::infinity();
    /// The name the summary line starts with.
    std::string name = "benchmark";
    /// The stream the GPU time is measured on: the events bracketing each call are recorded here,
    /// so it must be the stream (or be ordered with the streams) the callable enqueues its work
    /// on. The default is the legacy default stream, which CuPy also uses by default.
    StreamRef stream;
    /// The devices to take GPU times on, each with its own events (CuPy's `devices=`); the summary
    /// has one `GPU-<n>` part per device. Empty: the current context's device, on `stream`.
    std::vector<BenchmarkDevice> devices;
};

/// The times kiln::benchmark measured: for each repeat, the host time of the call and the GPU
/// time between events recorded before and after it.
class BenchmarkResult {
  public:
    /// A result from raw times in seconds, one per repeat. @p gpu_times must be as long as
    /// @p cpu_times.
    /// @param name the measurement's name.
    /// @param cpu_times the host time of each repeat, in seconds.
    /// @param gpu_times the GPU time of each repeat, in seconds.
    /// @param device the ordinal of the device the GPU times were taken on.
    /// @throws ArgumentError for no repeats or series of different lengths.
    BenchmarkResult(std::string name, std::vector<double> cpu_times, std::vector<double> gpu_times,
                    int device = 0);
    /// A result with GPU times from several devices, each series as long as @p cpu_times.
    /// @param name the measurement's name.
    /// @param cpu_times the host time of each repeat, in seconds.
    /// @param devices the GPU times of each device, at least one device.
    /// @return the result; device() and gpu_times() are the first device's.
    /// @throws ArgumentError for no repeats, no device or series of different lengths.
    static BenchmarkResult with_devices(std::string name, std::vector<double> cpu_times,
                                        std::vector<DeviceTimes> devices);

    /// The measurement's name.
    /// @return the measurement's name (BenchmarkOptions::name).
    const std::string& name() const noexcept { return m_name; }
    /// Host (steady clock) time of each call, in seconds.
    /// @return one time per repeat.
    const std::vector<double>& cpu_times() const noexcept { return m_cpu_times; }
    /// GPU time of each call (CUDA events), in seconds.
    /// @return one time per repeat.
    const std::vector<double>& gpu_times() const noexcept { return m_devices.front().times; }
    /// The ordinal of the device the GPU times were taken on (the first, with several).
    /// @return the ordinal.
    int device() const noexcept { return m_devices.front().device; }
    /// The GPU times of every device timed, in the order BenchmarkOptions::devices gave them.
    /// @return one entry per device; the first is device() with gpu_times().
    const std::vector<DeviceTimes>& device_times() const noexcept { return m_devices; }
    /// Statistics of cpu_times(), in seconds.
    /// @return count, mean, standard deviation, minimum and maximum.
    Statistics cpu_statistics() const { return Statistics::of(m_cpu_times); }
    /// Statistics of gpu_times(), in seconds.
    /// @return count, mean, standard deviation, minimum and maximum.
    Statistics gpu_statistics() const { return Statistics::of(gpu_times()); }

    /// CuPy's line: the name padded to 20 columns, then `CPU:` mean `+/-` standard deviation
    /// `(min: ... / max: ...) us`, then (with @p show_gpu) `GPU-<device>:` the same, once per
    /// device timed.
    /// @param show_gpu whether to add the GPU times.
    /// @return the line, without a newline.
    std::string to_string(bool show_gpu = true) const;
    /// A JSON object: name, device, repeats, the raw times and their statistics, in microseconds;
    /// with several devices, also `devices`: each device's statistics and times.
    /// @return the object, on one line.
    std::string to_json() const;

  private:
    std::string m_name;
    std::vector<double> m_cpu_times;
    std::vector<DeviceTimes> m_devices;

    void check() const;
};

/// Writes BenchmarkResult::to_string().
/// @param out the stream.
/// @param result the result.
/// @return @p out.
std::ostream& operator<<(std::ostream& out, const BenchmarkResult& result);

namespace detail {
BenchmarkResult run_benchmark(void (*call)(void*), void* callable, const BenchmarkOptions& options);
} // namespace detail

/// Time @p function (called with no arguments) as CuPy's `cupyx.profiler.benchmark` does: after
/// `n_warmup` untimed calls and a synchronization, each repeat records an event on
/// `options.stream`, reads the steady clock, calls, reads the clock again, records a second event
/// and waits for it. Repeats stop after `n_repeat` or once `max_duration` seconds have passed.
///
/// Runs in the calling thread's current context (device 0's primary context if none is current).
/// With `options.devices`, each repeat records its events on every device listed, so a callable
/// that spreads work over several GPUs gets one GPU time per device.
/// @tparam F a callable with no arguments.
/// @param function what to time; its work must be queued on `options.stream` or ordered with it.
/// @param options repeats, warm-up, time limit, name and stream.
/// @return the times of every repeat.
/// @throws ArgumentError for n_repeat < 1 or n_warmup < 0, NoDeviceError, CudaError, and whatever
/// @p function throws.
template <class F> BenchmarkResult benchmark(F&& function, const BenchmarkOptions& options = {}) {
    using Callable = std::remove_reference_t<F>;
    return detail::run_benchmark([](void* f) { (*static_cast<Callable*>(f))(); },
                                 const_cast<void*>(static_cast<const void*>(&function)), options);
}

} // namespace kiln
