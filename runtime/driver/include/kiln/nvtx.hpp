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

/// @{
/// Colours (ARGB) for ranges; green is the default, and Kiln's own ranges use it.
inline constexpr std::uint32_t kGreen = 0xff76b900;
inline constexpr std::uint32_t kBlue = 0xff1f77b4;
inline constexpr std::uint32_t kOrange = 0xffff7f0e;
inline constexpr std::uint32_t kRed = 0xffd62728;
inline constexpr std::uint32_t kPurple = 0xff9467bd;
inline constexpr std::uint32_t kCyan = 0xff17becf;
inline constexpr std::uint32_t kYellow = 0xffbcbd22;
inline constexpr std::uint32_t kGray = 0xff7f7f7f;
/// @}

/// Open a range named @p name on the calling thread; ranges nest and close in reverse order.
/// @param name the range's name, copied by NVTX.
/// @param argb its colour.
void push_range(const char* name, std::uint32_t argb = kGreen) noexcept;
/// push_range() with a std::string name.
/// @param name the range's name.
/// @param argb its colour.
inline void push_range(const std::string& name, std::uint32_t argb = kGreen) noexcept {
    push_range(name.c_str(), argb);
}
/// Close the calling thread's innermost range.
void pop_range() noexcept;
/// An instantaneous marker named @p message.
/// @param message the marker's text.
/// @param argb its colour.
void mark(const char* message, std::uint32_t argb = kGreen) noexcept;

/// Open a range around every kernel and graph launch issued through Kiln, named after the
/// kernel ("kernel NAME", "graph launch"), or stop doing so. Off by default: while off, launches
/// pay nothing for it.
/// @param enabled whether launches get ranges, for every thread.
void set_launch_ranges(bool enabled) noexcept;
/// Whether launches get ranges.
/// @return whether launches get ranges (set_launch_ranges()).
bool launch_ranges() noexcept;

/// An NVTX range for the lifetime of the object, on the thread that made it (CuPy's
/// `cupyx.profiler.time_range`). Not movable: it closes where it was opened.
class TimeRange {
  public:
    /// Open the range.
    /// @param name the range's name.
    /// @param argb its colour.
    explicit TimeRange(const char* name, std::uint32_t argb = kGreen) noexcept {
        push_range(name, argb);
    }
    /// Open the range.
    /// @param name the range's name.
    /// @param argb its colour.
    explicit TimeRange(const std::string& name, std::uint32_t argb = kGreen) noexcept {
        push_range(name, argb);
    }
    /// Close the range.
    ~TimeRange() { pop_range(); }
    /// Not copyable: a range closes once.
    TimeRange(const TimeRange&) = delete;
    /// Not copyable.
    TimeRange& operator=(const TimeRange&) = delete;
};

} // namespace kiln::nvtx

namespace kiln {
/// CuPy's spelling of kiln::nvtx::TimeRange.
using time_range = nvtx::TimeRange;
} // namespace kiln
