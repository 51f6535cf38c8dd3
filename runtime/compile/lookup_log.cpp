#include "lookup_log.hpp"

#include "compile_trace.hpp"
#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/cache/explain.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "log_line.hpp"
#include "nvrtc_identity.hpp"

#include <exception>
#include <string>

namespace kiln::detail {

void log_disk_lookup(cache::Store& store, const Program& program,
                     const std::function<cache::Entry()>& wanted) noexcept {
    try {
        // A traced compile bypasses the disk cache: no lookup to report.
        if (!log_enabled(LogLevel::debug) || compile_time_trace_enabled()) return;
        const std::string key = program.key().hex();
        if (program.origin() == ProgramOrigin::disk_cache) {
            log_debug("cache hit {} ({})", key, program.arch());
            return;
        }
        cache::Entry entry = wanted();
        entry.key = program.key();
        entry.arch = program.arch();
        entry.nvrtc_version = nvrtc_display_version();
        entry.kernel_names =
            cache::cubin_kernel_names(program.cubin()).value_or(std::vector<std::string>{});
        const cache::MissReason why = cache::MissExplainer(store.local()).explain(entry);
        if (!why.nearest) {
            log_debug("cache miss {} ({}): no entry of this kernel in {}", key, program.arch(),
                      store.config().dir.string());
            return;
        }
        std::string fields;
        for (const auto field : why.differs)
            fields += std::string(fields.empty() ? "" : ", ") + cache::to_string(field);
        log_debug("cache miss {} ({}): the nearest entry of this kernel, {}, differs in {}", key,
                  program.arch(), why.nearest->hex(), fields.empty() ? "nothing recorded" : fields);
    } catch (const std::exception&) {
        // A log line is not worth failing a compile for.
    }
}

} // namespace kiln::detail
