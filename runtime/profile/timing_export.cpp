#include "kiln/timing_export.hpp"

#include "kiln/error.hpp"
#include "kiln/timing_report.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>

namespace kiln {

namespace {

using nlohmann::json;

// Chrome trace process ids: the host, then one per device.
constexpr int kHostPid = 0;
int device_pid(int device) {
    return 1 + device;
}

json number_or_null(double value) {
    return std::isfinite(value) ? json(value) : json(nullptr);
}

json metadata(const char* what, int pid, int tid, const std::string& name) {
    return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

json arguments(const TimingResult& r) {
    json args = {{"sequence", r.sequence}, {"kind", activity_name(r.kind)}, {"device", r.device}};
    if (r.bytes) args["bytes"] = r.bytes;
    if (r.captured) args["captured"] = true;
    return args;
}

} // namespace

std::string to_chrome_trace(const std::vector<TimingResult>& results) {
    json events = json::array();
    std::set<std::uint32_t> threads;
    std::set<int> devices;
    for (const auto& r : results) {
        threads.insert(r.thread);
        const double issue_us = r.issue_ms * 1e3;
        events.push_back({{"name", r.name},
                          {"cat", std::string("issue,") + activity_name(r.kind)},
                          {"ph", "X"},
                          {"pid", kHostPid},
                          {"tid", r.thread},
                          {"ts", issue_us},
                          {"dur", r.issue_duration_ms * 1e3},
                          {"args", arguments(r)}});
        if (!std::isfinite(r.elapsed_ms)) continue; // never ran: nothing on the device
        devices.insert(r.device);
        const double gpu_us = std::isfinite(r.start_ms) ? r.start_ms * 1e3 : issue_us;
        events.push_back({{"name", r.name},
                          {"cat", activity_name(r.kind)},
                          {"ph", "X"},
                          {"pid", device_pid(r.device)},
                          {"tid", 0},
                          {"ts", gpu_us},
                          {"dur", r.elapsed_ms * 1e3},
                          {"args", arguments(r)}});
        // A flow arrow from the issue to the GPU activity ("bp": "e" binds to the enclosing
        // slice).
        events.push_back({{"name", "issue"},
                          {"cat", "flow"},
                          {"ph", "s"},
                          {"id", r.sequence},
                          {"pid", kHostPid},
                          {"tid", r.thread},
                          {"ts", issue_us}});
        events.push_back({{"name", "issue"},
                          {"cat", "flow"},
                          {"ph", "f"},
                          {"bp", "e"},
                          {"id", r.sequence},
                          {"pid", device_pid(r.device)},
                          {"tid", 0},
                          {"ts", gpu_us}});
    }
    events.push_back(metadata("process_name", kHostPid, 0, "host"));
    for (std::uint32_t thread : threads)
        events.push_back(metadata("thread_name", kHostPid, static_cast<int>(thread),
                                  "thread " + std::to_string(thread)));
    for (int device : devices) {
        events.push_back(
            metadata("process_name", device_pid(device), 0, "cuda:" + std::to_string(device)));
        events.push_back(metadata("thread_name", device_pid(device), 0, "activities"));
    }
    const json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
    return trace.dump();
}

std::string to_json(const std::vector<TimingResult>& results) {
    json activities = json::array();
    double total = 0;
    for (const auto& r : results) {
        if (std::isfinite(r.elapsed_ms)) total += r.elapsed_ms;
        activities.push_back({{"sequence", r.sequence},
                              {"kind", activity_name(r.kind)},
                              {"name", r.name},
                              {"device", r.device},
                              {"elapsed_ms", number_or_null(r.elapsed_ms)},
                              {"start_ms", number_or_null(r.start_ms)},
                              {"issue_ms", r.issue_ms},
                              {"issue_duration_ms", r.issue_duration_ms},
                              {"bytes", r.bytes},
                              {"thread", r.thread},
                              {"captured", r.captured}});
    }
    json by_activity = json::array();
    for (const auto& s : summarize_activities(results))
        by_activity.push_back({{"name", s.name}, {"count", s.count}, {"total_ms", s.total_ms}});
    json by_device = json::array();
    for (const auto& s : summarize_devices(results))
        by_device.push_back({{"device", s.device}, {"count", s.count}, {"total_ms", s.total_ms}});
    const json document = {{"activities", activities},
                           {"activity_summary", by_activity},
                           {"device_summary", by_device},
                           {"total_ms", total}};
    return document.dump(2);
}

void write_chrome_trace(const std::vector<TimingResult>& results,
                        const std::filesystem::path& path) {
    const std::string trace = to_chrome_trace(results);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(trace.data(), static_cast<std::streamsize>(trace.size())) ||
        !out.flush())
        throw Error("cannot write the Chrome trace to '" + path.string() +
                    "': check that its directory exists and is writable");
}

} // namespace kiln
