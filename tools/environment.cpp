// Every `kiln` command checks Kiln's environment variables first, so a value that does not parse
// is an error on every run, also where the library would only have dropped a warning (a logger
// that cannot be made) or never read the variable.

#include "commands.hpp"

#include "kiln/cache/settings.hpp"
#include "kiln/log.hpp"
#include "kiln/settings.hpp"

namespace kiln::tools {

void check_environment() {
    kiln::logger();                   // KILN_LOG_LEVEL
    cache::config_without_settings(); // KILN_CACHE_*, and the remote tier's URL and password file;
                                      // the settings file is each command's
    for (const settings::Definition& d : settings::all()) // every other variable, by its type
        settings::check(d.variable);
}

} // namespace kiln::tools
