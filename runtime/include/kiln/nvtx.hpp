#pragma once
/// @file
/// NVTX ranges in the domain `kiln`, for Nsight Systems (`nsys profile -t cuda,nvtx`). Kiln marks
/// its own compiles and disk-cache loads, and, once set_launch_ranges(true) is called, every
/// launch issued through it; user code adds its own ranges with kiln::time_range.
///
/// NVTX is header-only (nvtx3 from the CUDA toolkit): with no tool attached each call returns at
/// once, and no library is needed.
///
/// @code
/// {
///     kiln::time_range range("solver step", kiln::nvtx::kBlue);
///     step(state); // shows as a blue "solver step" range on this thread's NVTX row
/// }
/// @endcode

#include <cstdint>
#include <string>

namespace kiln::nvtx {

/// Colours (ARGB) for ranges.
inline constexpr std::uint32_t kGreen = 0xff76b900;
inline constexpr std::uint32_t kBlue = 0xff1f77b4;
inline constexpr std::uint32_t kOrange = 0xffff7f0e;
inline constexpr std::uint32_t kRed = 0xffd62728;
inline constexpr std::uint32_t kPurple = 0xff9467bd;
inline constexpr std::uint32_t kCyan = 0xff17becf;
inline constexpr std::uint32_t kYellow = 0xffbcbd22;
inline constexpr std::uint32_t kGray = 0xff7f7f7f;

/// Open a range named @p name on the calling thread; ranges nest and close in reverse order.
void push_range(const char* name, std::uint32_t argb = kGreen) noexcept;
inline void push_range(const std::string& name, std::uint32_t argb = kGreen) noexcept {
    push_range(name.c_str(), argb);
}
/// Close the calling thread's innermost range.
void pop_range() noexcept;
/// An instantaneous marker named @p message.
void mark(const char* message, std::uint32_t argb = kGreen) noexcept;

/// Open a range around every kernel and graph launch issued through Kiln, named after the
/// kernel ("kernel NAME", "graph launch"), or stop doing so. Off by default: while off, launches
/// pay nothing for it.
void set_launch_ranges(bool enabled) noexcept;
bool launch_ranges() noexcept;

/// An NVTX range for the lifetime of the object, on the thread that made it (CuPy's
/// `cupyx.profiler.time_range`). Not movable: it closes where it was opened.
class TimeRange {
  public:
    explicit TimeRange(const char* name, std::uint32_t argb = kGreen) noexcept {
        push_range(name, argb);
    }
    explicit TimeRange(const std::string& name, std::uint32_t argb = kGreen) noexcept {
        push_range(name, argb);
    }
    ~TimeRange() { pop_range(); }
    TimeRange(const TimeRange&) = delete;
    TimeRange& operator=(const TimeRange&) = delete;
};

} // namespace kiln::nvtx

namespace kiln {
/// CuPy's spelling of kiln::nvtx::TimeRange.
using time_range = nvtx::TimeRange;
} // namespace kiln
