#pragma once
/// @file
/// The kinds of operation Kiln can time (kiln/activity.hpp): kernel launches, Kiln's ready
/// kernels, copies, fills and graph launches. Every operation reports its kind to activity timing
/// and NVTX, which is why the kinds are defined beside the driver layer that issues them.

#include <cstdint>

namespace kiln {

/// Kinds of activity to time; combine with `|`.
enum class Activity : std::uint32_t {
    none = 0,
    kernel = 1u << 0,         ///< kernels launched through RawKernel, RawModule or Function
    builtin_kernel = 1u << 1, ///< Kiln's ready kernels (elementwise operations, reductions)
    copy = 1u << 2,           ///< DeviceBuffer copies
    fill = 1u << 3,           ///< DeviceBuffer fills
    graph = 1u << 4,          ///< graph launches through kiln::GraphExec / kiln::launch_graph
    all = (1u << 5) - 1,
};

/// The kinds in either set.
/// @param a a set of kinds.
/// @param b another set.
/// @return their union.
constexpr Activity operator|(Activity a, Activity b) noexcept {
    return static_cast<Activity>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}
/// The kinds in both sets.
/// @param a a set of kinds.
/// @param b another set.
/// @return their intersection.
constexpr Activity operator&(Activity a, Activity b) noexcept {
    return static_cast<Activity>(static_cast<std::uint32_t>(a) & static_cast<std::uint32_t>(b));
}
/// Whether @p set includes any kind of @p kinds.
/// @param set a set of kinds.
/// @param kinds the kinds asked about.
/// @return true when they share a kind.
constexpr bool has_activity(Activity set, Activity kinds) noexcept {
    return (set & kinds) != Activity::none;
}

} // namespace kiln
