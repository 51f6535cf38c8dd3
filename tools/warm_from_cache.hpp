#pragma once
// `kiln warm --from-cache DIR --arch ...`: the kernels another cache holds, compiled again from
// their recipes for named architectures (warm_from_cache.cpp). warm_command.cpp registers the
// option and dispatches here.

#include <string>

namespace kiln::tools {

struct WarmFromCacheArgs {
    std::string dir;    ///< the cache whose entries' recipes are compiled
    std::string arches; ///< "sm_80,sm_90"
    unsigned jobs = 0;  ///< parallel compiles; 0: the number of cores
    bool json = false;
    bool threads = false; ///< compile in threads of this process, not worker processes
};

/// Compile every recipe in @p args.dir for every architecture, into the current cache
/// (KILN_CACHE_DIR). @throws kiln::Error when some compile failed (after all others ran), the
/// directory cannot be read, or the current cache cannot be written.
void run_warm_from_cache(const WarmFromCacheArgs& args);

} // namespace kiln::tools
