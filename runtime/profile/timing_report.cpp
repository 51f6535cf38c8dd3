#include "kiln/timing_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace kiln {

namespace {

std::string device_label(int device) {
    return "cuda:" + std::to_string(device);
}

double finite_or_zero(double ms) {
    return std::isfinite(ms) ? ms : 0.0;
}

// One row: `   12.345678 ms | <column>| text`.
std::string row(double ms, const std::string& column, const std::string& text) {
    char time[32];
    std::snprintf(time, sizeof time, "%12.6f ms", ms);
    std::string line = time;
    line += " | ";
    line += column;
    if (column.size() < 7) line.append(7 - column.size(), ' ');
    line += " | ";
    line += text;
    return line;
}

std::string count_column(std::size_t count) {
    char text[32];
    std::snprintf(text, sizeof text, "%7zu", count);
    return text;
}

void table_header(std::ostream& out, const std::string& indent, const std::string& title,
                  const std::string& first, const std::string& second, const std::string& third,
                  const std::string& dashes) {
    out << indent << title << '\n';
    out << indent << "----------------+---------+" << dashes << '\n';
    out << indent << first << " | " << second << " | " << third << '\n';
    out << indent << "----------------+---------+" << dashes << '\n';
}

} // namespace

std::vector<ActivitySummary> summarize_activities(const std::vector<TimingResult>& results) {
    std::vector<ActivitySummary> summary;
    for (const auto& r : results) {
        auto found = std::find_if(summary.begin(), summary.end(),
                                  [&](const ActivitySummary& s) { return s.name == r.name; });
        if (found == summary.end()) found = summary.insert(summary.end(), {r.name, 0, 0.0});
        ++found->count;
        found->total_ms += finite_or_zero(r.elapsed_ms);
    }
    return summary;
}

std::vector<DeviceSummary> summarize_devices(const std::vector<TimingResult>& results) {
    std::vector<DeviceSummary> summary;
    for (const auto& r : results) {
        auto found = std::find_if(summary.begin(), summary.end(),
                                  [&](const DeviceSummary& s) { return s.device == r.device; });
        if (found == summary.end()) found = summary.insert(summary.end(), {r.device, 0, 0.0});
        ++found->count;
        found->total_ms += finite_or_zero(r.elapsed_ms);
    }
    return summary;
}

void timing_print(const std::vector<TimingResult>& results, const std::string& indent,
                  std::ostream& out) {
    if (results.empty()) {
        out << indent << "No activity\n";
        return;
    }
    std::size_t width = std::string("Activity").size();
    for (const auto& r : results)
        width = std::max(width, r.name.size());
    const std::string dashes(width + 1, '-');

    table_header(out, indent, "CUDA timeline:", "Time           ", "Device ", "Activity", dashes);
    for (const auto& r : results)
        out << indent << row(r.elapsed_ms, device_label(r.device), r.name) << '\n';

    out << '\n';
    table_header(out, indent, "CUDA activity summary:", "Total time     ", "Count  ", "Activity",
                 dashes);
    for (const auto& s : summarize_activities(results))
        out << indent << row(s.total_ms, count_column(s.count), s.name) << '\n';

    out << '\n';
    table_header(out, indent, "CUDA device summary:", "Total time     ", "Count  ", "Device",
                 dashes);
    for (const auto& s : summarize_devices(results))
        out << indent << row(s.total_ms, count_column(s.count), device_label(s.device)) << '\n';
}

void timing_print(const std::vector<TimingResult>& results, const std::string& indent) {
    timing_print(results, indent, std::cout);
    std::cout.flush();
}

} // namespace kiln
