#include "kiln/profiler.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "log_line.hpp"

namespace kiln {

void profiler_start() {
    detail::current_context();
    KILN_CU(cuProfilerStart());
}

void profiler_stop() {
    detail::current_context();
    KILN_CU(cuProfilerStop());
}

ProfilerRange::~ProfilerRange() {
    try {
        profiler_stop();
    } catch (const std::exception& e) {
        kiln::detail::log_error("ProfilerRange: {}", e.what());
    }
}

} // namespace kiln
