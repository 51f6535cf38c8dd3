#include "driver_trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <type_traits>
#include <utility>

namespace kiln::detail {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_tracing{false};

// Room for one line: a longer one is cut.
constexpr std::size_t kLineSize = 160;

// The end of this thread's previous line: a driver call's return or a mark.
thread_local Clock::time_point t_previous_end{};

double micros(Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

void write_line(const char* line, int n) {
    if (n <= 0) return;
    [[maybe_unused]] const ssize_t written = ::write(
        STDERR_FILENO, line, std::min<std::size_t>(static_cast<std::size_t>(n), kLineSize - 1));
}

double since_previous(Clock::time_point at) {
    return t_previous_end == Clock::time_point{} ? 0.0 : micros(at - t_previous_end);
}

// One line per call, written with a single write(2) so that threads' lines never interleave.
void report(const char* name, Clock::time_point start, Clock::time_point end, CUresult result) {
    const double gap = since_previous(start);
    char line[kLineSize];
    const int n = result == CUDA_SUCCESS
                      ? std::snprintf(line, sizeof line, "kiln driver: +%9.1f us  %-44s %9.1f us\n",
                                      gap, name, micros(end - start))
                      : std::snprintf(line, sizeof line,
                                      "kiln driver: +%9.1f us  %-44s %9.1f us  -> error %d\n", gap,
                                      name, micros(end - start), static_cast<int>(result));
    write_line(line, n);
    t_previous_end = Clock::now(); // the report itself is not Kiln's work
}

// The wrapper of one entry, identified by its member of Driver: the real function and its name.
template <auto Member,
          class Function = std::remove_reference_t<decltype(std::declval<Driver&>().*Member)>>
struct Traced;

template <auto Member, class... Args> struct Traced<Member, CUresult(CUDAAPI*)(Args...)> {
    static inline CUresult(CUDAAPI* real)(Args...) = nullptr;
    static inline const char* name = nullptr;
    static CUresult CUDAAPI call(Args... args) {
        const Clock::time_point start = Clock::now();
        const CUresult result = real(args...);
        report(name, start, Clock::now(), result);
        return result;
    }
};

template <auto Member> void wrap(Driver& driver, const char* name) {
    using T = Traced<Member>;
    T::real = driver.*Member;
    T::name = name;
    driver.*Member = &T::call;
}

} // namespace

void trace_mark(const char* step) noexcept {
    if (!g_tracing.load(std::memory_order_relaxed)) return;
    char line[kLineSize];
    const int n = std::snprintf(line, sizeof line, "kiln driver: +%9.1f us  (kiln) %s\n",
                                since_previous(Clock::now()), step);
    write_line(line, n);
    t_previous_end = Clock::now();
}

void trace_driver_calls(Driver& driver) {
    g_tracing.store(true, std::memory_order_relaxed);
#define KILN_DRIVER_TRACE_ONE(name) wrap<&Driver::name>(driver, #name);
    KILN_DRIVER_FUNCTIONS(KILN_DRIVER_TRACE_ONE)
#undef KILN_DRIVER_TRACE_ONE
}

} // namespace kiln::detail
