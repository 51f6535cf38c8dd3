#include "kiln/scoped_timer.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/timing_export.hpp"
#include "kiln/timing_report.hpp"
#include "log_line.hpp"

#include <cstdio>
#include <iostream>

namespace kiln {

namespace {

// Nesting depth of printing timers on this thread; the outermost prints at depth 0.
thread_local int t_depth = 0;

// Every device Kiln has used, not only the current one: a timed block may drive several GPUs.
void synchronize_device() {
    detail::synchronize_devices();
}

} // namespace

ScopedTimer::ScopedTimer(std::string name, ScopedTimerOptions options)
    : m_name(std::move(name))
    , m_options(std::move(options)) {
    if (!m_options.active) return;
    if (m_options.synchronize) synchronize_device();
    // One synchronization is enough: the session's own is skipped when the timer already waited.
    if (m_options.activities != Activity::none)
        m_session.emplace(m_options.activities, !m_options.synchronize);
    if (m_options.nvtx) {
        nvtx::push_range(m_name, m_options.nvtx_color);
        m_range = true;
    }
    if (m_options.print) m_depth = t_depth++;
    m_running = true;
    m_start = std::chrono::steady_clock::now();
}

ScopedTimer::~ScopedTimer() {
    if (!m_running) return;
    try {
        stop();
    } catch (const std::exception& e) {
        kiln::detail::log_error("ScopedTimer '{}': {}", m_name, e.what());
    }
}

double ScopedTimer::stop() {
    if (!m_running) return m_elapsed_ms;
    m_running = false;
    struct Unwind { // leave the nesting level and the NVTX range whatever happens below
        ScopedTimer& timer;
        ~Unwind() {
            if (timer.m_range) nvtx::pop_range();
            timer.m_range = false;
            if (timer.m_options.print) t_depth = timer.m_depth;
        }
    } unwind{*this};

    if (m_options.synchronize) synchronize_device();
    m_elapsed_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - m_start)
            .count();
    if (m_session) {
        m_results = m_session->end(!m_options.synchronize);
        m_session.reset();
    }

    const std::string indent(4 * static_cast<std::size_t>(m_depth), ' ');
    std::ostream& out = m_options.out ? *m_options.out : std::cout;
    if (m_options.activities != Activity::none) {
        if (m_options.report) {
            m_options.report(m_results, indent);
        } else if (m_options.print && !m_results.empty()) {
            timing_print(m_results, indent, out);
            out << '\n';
        }
        if (!m_options.chrome_trace.empty()) write_chrome_trace(m_results, m_options.chrome_trace);
    }
    if (m_options.print) {
        char took[64];
        std::snprintf(took, sizeof took, " took %.2f ms", m_elapsed_ms);
        out << indent << m_name << took;
        if (!m_extra_message.empty()) out << ' ' << m_extra_message;
        out << '\n';
        out.flush();
    }
    return m_elapsed_ms;
}

} // namespace kiln
