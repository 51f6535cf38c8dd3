// Every `kiln` command checks Kiln's environment variables first, so a value that does not parse
// is an error on every run, also where the library would only have dropped a warning (a logger
// that cannot be made) or never read the variable.

#include "commands.hpp"

#include "kiln/cache/settings.hpp"
#include "kiln/env.hpp"
#include "kiln/log.hpp"

namespace kiln::tools {

void check_environment() {
    kiln::logger();                       // KILN_LOG_LEVEL
    cache::config_without_settings();     // KILN_CACHE_*; the settings file is each command's
    env::get_flag("KILN_LINEINFO", true); // the runtime's flags
    env::get_flag("KILN_DUMP_SOURCE_ON_ERROR", false);
    env::get_flag("KILN_COMPILE_TIME_TRACE", false);
    env::get_flag("KILN_NVRTC_CACHE", false);
    env::get_flag("KILN_BLOCK_CACHE", true);
    env::get_flag("KILN_DRIVER_TRACE", false);
    env::get_flag("KILN_CONTEXT_WARM_UP", true);
}

} // namespace kiln::tools
