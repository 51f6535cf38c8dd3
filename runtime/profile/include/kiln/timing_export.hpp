#pragma once
/// @file
/// Exports of an activity-timing session: Chrome trace JSON (opens in Perfetto,
/// https://ui.perfetto.dev, or chrome://tracing) and plain JSON for scripts.

#include "kiln/activity.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace kiln {

/// The session as a Chrome trace (the JSON object format, times in microseconds after the
/// session began): a "host" process with one track per issuing thread showing each issue call,
/// one "cuda:N" process per device showing each activity's GPU time, and flow arrows from each
/// issue to its GPU activity. Activities whose GPU start is unknown appear at their issue time;
/// those that never ran appear on the host only.
/// @param results a session's results.
/// @return the trace, a JSON object.
std::string to_chrome_trace(const std::vector<TimingResult>& results);

/// The session as plain JSON: `{"activities": [...], "activity_summary": [...],
/// "device_summary": [...], "total_ms": ...}`, times in milliseconds, unknown times as null.
/// @param results a session's results.
/// @return the JSON object.
std::string to_json(const std::vector<TimingResult>& results);

/// Write to_chrome_trace(@p results) to @p path.
/// @param results a session's results.
/// @param path the file to write (replaced if it exists).
/// @throws Error when the file cannot be written.
void write_chrome_trace(const std::vector<TimingResult>& results,
                        const std::filesystem::path& path);

} // namespace kiln
