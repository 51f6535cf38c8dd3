#include "kiln/benchmark.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/error.hpp"
#include "kiln/event.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <ostream>
#include <utility>

namespace kiln {

namespace {

// One device's part of CuPy's line: `    CPU:   12.345 us   +/- 1.234 (min:   10.000 / max:
// 20.000) us`; the spread is left out for a single repeat, as CuPy does.
std::string format_item(const std::string& device_name, const std::vector<double>& seconds) {
    std::vector<double> us(seconds);
    for (double& t : us)
        t *= 1e6;
    const Statistics s = Statistics::of(us);
    char buffer[160];
    std::snprintf(buffer, sizeof buffer, "    %s:%9.3f us", device_name.c_str(), s.mean);
    std::string item = buffer;
    if (s.count > 1) {
        std::snprintf(buffer, sizeof buffer, "   +/-%6.3f (min:%9.3f / max:%9.3f) us", s.stddev,
                      s.min, s.max);
        item += buffer;
    }
    return item;
}

// One device's events and times.
struct Timed {
    int device;
    StreamRef stream;
    Event start, end;
    std::vector<double> times;
};

nlohmann::json statistics_us(const std::vector<double>& seconds) {
    const Statistics s = Statistics::of(seconds);
    return {{"mean_us", s.mean * 1e6},
            {"stddev_us", s.stddev * 1e6},
            {"min_us", s.min * 1e6},
            {"max_us", s.max * 1e6}};
}

nlohmann::json microseconds(const std::vector<double>& seconds) {
    nlohmann::json array = nlohmann::json::array();
    for (double t : seconds)
        array.push_back(t * 1e6);
    return array;
}

} // namespace

BenchmarkResult::BenchmarkResult(std::string name, std::vector<double> cpu_times,
                                 std::vector<double> gpu_times, int device)
    : m_name(std::move(name))
    , m_cpu_times(std::move(cpu_times)) {
    m_devices.push_back({device, std::move(gpu_times)});
    check();
}

BenchmarkResult BenchmarkResult::with_devices(std::string name, std::vector<double> cpu_times,
                                              std::vector<DeviceTimes> devices) {
    if (devices.empty())
        throw ArgumentError("a benchmark result needs the GPU times of at least one device");
    BenchmarkResult result(std::move(name), std::move(cpu_times), devices.front().times,
                           devices.front().device);
    result.m_devices = std::move(devices);
    result.check();
    return result;
}

void BenchmarkResult::check() const {
    if (m_cpu_times.empty())
        throw ArgumentError("a benchmark result needs at least one repeat, got none");
    for (const DeviceTimes& d : m_devices)
        if (d.times.size() != m_cpu_times.size())
            throw ArgumentError(
                "a benchmark result needs one GPU time per CPU time: got " +
                std::to_string(m_cpu_times.size()) + " CPU and " + std::to_string(d.times.size()) +
                " GPU times" +
                (m_devices.size() > 1 ? " for GPU-" + std::to_string(d.device) : std::string()));
}

std::string BenchmarkResult::to_string(bool show_gpu) const {
    std::string line = m_name;
    if (line.size() < 20) line.append(20 - line.size(), ' ');
    line += ':';
    line += format_item("CPU", m_cpu_times);
    if (show_gpu)
        for (const DeviceTimes& d : m_devices) {
            line += ' ';
            line += format_item("GPU-" + std::to_string(d.device), d.times);
        }
    return line;
}

std::string BenchmarkResult::to_json() const {
    nlohmann::json json = {{"name", m_name},
                           {"device", device()},
                           {"n_repeat", m_cpu_times.size()},
                           {"cpu", statistics_us(m_cpu_times)},
                           {"gpu", statistics_us(gpu_times())},
                           {"cpu_times_us", microseconds(m_cpu_times)},
                           {"gpu_times_us", microseconds(gpu_times())}};
    if (m_devices.size() > 1) {
        nlohmann::json devices = nlohmann::json::array();
        for (const DeviceTimes& d : m_devices)
            devices.push_back({{"device", d.device},
                               {"gpu", statistics_us(d.times)},
                               {"gpu_times_us", microseconds(d.times)}});
        json["devices"] = std::move(devices);
    }
    return json.dump(2);
}

std::ostream& operator<<(std::ostream& out, const BenchmarkResult& result) {
    return out << result.to_string();
}

namespace detail {

BenchmarkResult run_benchmark(void (*call)(void*), void* callable,
                              const BenchmarkOptions& options) {
    if (options.n_repeat < 1)
        throw ArgumentError("benchmark needs n_repeat >= 1, got " +
                            std::to_string(options.n_repeat));
    if (options.n_warmup < 0)
        throw ArgumentError("benchmark needs n_warmup >= 0, got " +
                            std::to_string(options.n_warmup));
    std::vector<BenchmarkDevice> devices = options.devices;
    if (devices.empty()) devices.push_back({current_device_ordinal(), options.stream});
    // Each device's events live in its context: the current one for the current device (an
    // application's own context included), the device's primary context for the others.
    std::vector<Timed> timed;
    timed.reserve(devices.size());
    for (const BenchmarkDevice& d : devices) {
        OnDevice on(d.device);
        timed.push_back({d.device, d.stream, Event(true), Event(true), {}});
        timed.back().times.reserve(static_cast<std::size_t>(options.n_repeat));
    }
    for (int i = 0; i < options.n_warmup; ++i)
        call(callable);
    // Drain the warm-up work so the first repeat does not wait for it.
    for (Timed& t : timed) {
        OnDevice on(t.device);
        t.start.record(t.stream);
        t.start.synchronize();
    }

    using Clock = std::chrono::steady_clock;
    std::vector<double> cpu_times;
    cpu_times.reserve(static_cast<std::size_t>(options.n_repeat));
    double duration = 0;
    for (int i = 0; i < options.n_repeat; ++i) {
        for (Timed& t : timed) {
            OnDevice on(t.device);
            t.start.record(t.stream);
        }
        const auto t1 = Clock::now();
        call(callable);
        const auto t2 = Clock::now();
        for (Timed& t : timed) {
            OnDevice on(t.device);
            t.end.record(t.stream);
        }
        for (Timed& t : timed) {
            t.end.synchronize();
            t.times.push_back(elapsed_ms(t.start, t.end) * 1e-3);
        }
        cpu_times.push_back(std::chrono::duration<double>(t2 - t1).count());
        duration += std::chrono::duration<double>(Clock::now() - t1).count();
        if (duration > options.max_duration) break;
    }
    std::vector<DeviceTimes> results;
    results.reserve(timed.size());
    for (Timed& t : timed)
        results.push_back({t.device, std::move(t.times)});
    return BenchmarkResult::with_devices(options.name, std::move(cpu_times), std::move(results));
}

} // namespace detail

} // namespace kiln
