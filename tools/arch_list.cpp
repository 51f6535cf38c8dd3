#include "arch_list.hpp"

#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <algorithm>
#include <sstream>

namespace kiln::tools {

std::vector<std::string> parse_arch_list(const std::string& text) {
    std::vector<std::string> arches;
    std::stringstream in(text);
    std::string arch;
    while (std::getline(in, arch, ',')) {
        if (arch.empty()) continue;
        std::string name = normalize_arch(arch);
        if (std::find(arches.begin(), arches.end(), name) == arches.end())
            arches.push_back(std::move(name));
    }
    if (arches.empty()) throw ArgumentError("--arch needs at least one architecture, e.g. sm_90");
    return arches;
}

} // namespace kiln::tools
