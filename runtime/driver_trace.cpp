#include "driver_trace.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <type_traits>
#include <utility>

namespace kiln::detail {

namespace {

using Clock = std::chrono::steady_clock;

double micros(Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

// One line per call, written with a single write(2) so that threads' lines never interleave.
void report(const char* name, Clock::time_point start, Clock::time_point end, CUresult result) {
    thread_local Clock::time_point previous_end{};
    const double gap = previous_end == Clock::time_point{} ? 0.0 : micros(start - previous_end);
    char line[160];
    const int n = result == CUDA_SUCCESS
                      ? std::snprintf(line, sizeof line, "kiln driver: +%9.1f us  %-44s %9.1f us\n",
                                      gap, name, micros(end - start))
                      : std::snprintf(line, sizeof line,
                                      "kiln driver: +%9.1f us  %-44s %9.1f us  -> error %d\n", gap,
                                      name, micros(end - start), static_cast<int>(result));
    if (n > 0) {
        const auto size = static_cast<std::size_t>(n) < sizeof line ? static_cast<std::size_t>(n)
                                                                    : sizeof line - 1;
        [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line, size);
    }
    previous_end = Clock::now(); // the report itself is not Kiln's work
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

void trace_driver_calls(Driver& driver) {
#define KILN_DRIVER_TRACE_ONE(name) wrap<&Driver::name>(driver, #name);
    KILN_DRIVER_FUNCTIONS(KILN_DRIVER_TRACE_ONE)
#undef KILN_DRIVER_TRACE_ONE
}

} // namespace kiln::detail
