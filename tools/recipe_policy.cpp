// What a tool will not compile from a recipe it did not write (recipe_policy.hpp).

#include "recipe_policy.hpp"

#include "compile/recipe_sandbox.hpp"

#include <string_view>

namespace kiln::tools {

std::string recipe_refusal(const cache::Recipe& recipe) {
    // Option names with their dashes stripped; a prefix match also catches "=FILE" forms.
    constexpr std::string_view kWritesFiles[] = {"fdevice-time-trace", "device-time-trace",
                                                 "ftime-trace", "time", "compiler-stats-file"};
    for (const auto& option : recipe.options) {
        std::string_view name = option;
        while (!name.empty() && name.front() == '-')
            name.remove_prefix(1);
        for (std::string_view bad : kWritesFiles)
            if (name.substr(0, bad.size()) == bad)
                return "its recipe has the option '" + option +
                       "', which makes NVRTC write a file; Kiln compiles no such recipe it did not "
                       "write";
    }
    // Nothing but its own headers and the toolkit's: no local file read into a cubin or a log.
    return detail::recipe_sandbox_refusal(recipe);
}

} // namespace kiln::tools
