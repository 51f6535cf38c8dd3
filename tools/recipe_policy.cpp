// Options that make NVRTC write files (recipe_policy.hpp).

#include "recipe_policy.hpp"

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
    return {};
}

} // namespace kiln::tools
