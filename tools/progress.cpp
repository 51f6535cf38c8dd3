// The progress line (progress.hpp).

#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace kiln::tools {

std::string progress_text(const ProgressCounts& counts, double seconds) {
    char rate[32] = "-";
    if (seconds >= 0.1)
        std::snprintf(rate, sizeof rate, "%.1f/s", static_cast<double>(counts.done) / seconds);
    char text[160];
    std::snprintf(text, sizeof text, "[%zu/%zu] %zu hits, %zu compiles, %zu failures, %s",
                  counts.done, counts.total, counts.hits, counts.compiles, counts.failures, rate);
    return text;
}

bool progress_wanted(bool json) {
    return !json && ::isatty(STDERR_FILENO);
}

ProgressLine::ProgressLine(bool enabled, std::function<ProgressCounts()> read,
                           std::function<void(const std::string&)> write)
    : m_enabled(enabled)
    , m_read(std::move(read))
    , m_write(std::move(write)) {}

ProgressLine::~ProgressLine() {
    finish();
}

void ProgressLine::start() {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_enabled || m_thread.joinable() || m_finished) return;
    m_thread = std::thread([this] { run(); });
}

void ProgressLine::run() {
    std::unique_lock<std::mutex> lock(m_mutex);
    while (!m_stop) {
        lock.unlock();
        draw();
        lock.lock();
        m_stop_signal.wait_for(lock, std::chrono::milliseconds(1000 / kRedrawsPerSecond),
                               [this] { return m_stop; });
    }
}

void ProgressLine::draw() {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    const ProgressCounts counts = m_read();
    m_write(kEraseLine + progress_text(counts, seconds));
}

void ProgressLine::finish() {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!m_enabled || m_finished) return;
        m_finished = true;
        m_stop = true;
    }
    // Never started (the work ended before it began): no line to end.
    if (!m_thread.joinable()) return;
    m_stop_signal.notify_all();
    m_thread.join();
    draw();
    m_write("\n");
}

} // namespace kiln::tools
