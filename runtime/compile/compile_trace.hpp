#pragma once
// KILN_COMPILE_TIME_TRACE: NVRTC's --fdevice-time-trace JSON for a compile. NVRTC writes the file
// itself and follows any link in its way, so it only ever writes into a private directory made
// for the compile (mkdtemp: unpredictable name, mode 0700); the trace is then published beside the
// cache entry through the store, which writes atomically and never through a planted link.

#include "kiln/cache/key.hpp"

#include <filesystem>
#include <string>

namespace kiln {
namespace cache {
class Store;
}

namespace detail {

/// Whether KILN_COMPILE_TIME_TRACE asks for traces. @throws ConfigError for an unparsable value.
bool compile_time_trace_enabled();

/// The time trace of one compile. Never throws: when no private directory can be made, the
/// compile runs without a trace (with a warning).
class TimeTrace {
  public:
    /// Makes the private directory `kiln-time-trace-XXXXXX` under $TMPDIR (else /tmp).
    explicit TimeTrace(const cache::Key& key) noexcept;
    /// Removes the private directory, unless it keeps the only copy of the trace.
    ~TimeTrace();
    TimeTrace(const TimeTrace&) = delete;
    TimeTrace& operator=(const TimeTrace&) = delete;

    /// The NVRTC option, "--fdevice-time-trace=<private directory>/<key>"; empty without a
    /// private directory.
    const std::string& option() const noexcept { return m_option; }

    /// After NVRTC has run: hands the trace to @p store (may be null) and returns where it was
    /// published (`<dir>/<ab>/<key>.json`). When the store cannot take it (no store, disabled,
    /// read-only, unwritable), the trace stays as `<key>.json` in the private directory, which is
    /// then kept, and that path is returned and logged as a warning. Returns an empty path when
    /// NVRTC wrote no trace. @p program names the compile in the log.
    std::filesystem::path publish(cache::Store* store, const std::string& program) noexcept;

  private:
    cache::Key m_key;
    std::filesystem::path m_dir;
    std::string m_option;
    bool m_keep = false;
};

} // namespace detail
} // namespace kiln
