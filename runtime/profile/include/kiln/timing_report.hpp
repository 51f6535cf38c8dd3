#pragma once
/// @file
/// The text report of an activity-timing session, laid out as Warp's `timing_print`: a timeline in
/// issue order, a summary per activity and a summary per device.
///
/// @code
/// CUDA timeline:
/// ----------------+---------+--------------
/// Time            | Device  | Activity
/// ----------------+---------+--------------
///     0.012288 ms | cuda:0  | memcpy HtoD
///     1.004544 ms | cuda:0  | kernel spin
/// @endcode

#include "kiln/activity.hpp"

#include <cstddef>
#include <iosfwd>
#include <string>
#include <vector>

namespace kiln {

/// The total GPU time of one activity name.
struct ActivitySummary {
    /// The activity's name, as TimingResult::name.
    std::string name;
    /// How many activities had that name.
    std::size_t count = 0;
    /// Sum of the finite elapsed times, in milliseconds.
    double total_ms = 0;
};

/// The total GPU time on one device.
struct DeviceSummary {
    /// The device's ordinal.
    int device = 0;
    /// How many activities ran on it.
    std::size_t count = 0;
    /// Sum of the finite elapsed times, in milliseconds.
    double total_ms = 0;
};

/// Per activity name, in order of first appearance. The totals add up to the timeline's.
/// @param results a session's results.
/// @return one summary per name.
std::vector<ActivitySummary> summarize_activities(const std::vector<TimingResult>& results);
/// Per device, in order of first appearance. The totals add up to the timeline's.
/// @param results a session's results.
/// @return one summary per device.
std::vector<DeviceSummary> summarize_devices(const std::vector<TimingResult>& results);

/// Print the timeline, the activity summary and the device summary to @p out, each line starting
/// with @p indent; "No activity" when @p results is empty.
/// @param results a session's results.
/// @param indent what each line starts with.
/// @param out the stream to print to.
void timing_print(const std::vector<TimingResult>& results, const std::string& indent,
                  std::ostream& out);
/// The same, to standard output.
/// @param results a session's results.
/// @param indent what each line starts with.
void timing_print(const std::vector<TimingResult>& results, const std::string& indent = "");

} // namespace kiln
