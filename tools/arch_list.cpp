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
    while (std::getline(in, arch, ','))
        if (!arch.empty()) arches.push_back(normalize_arch(arch));
    if (arches.empty()) throw ArgumentError("--arch needs at least one architecture, e.g. sm_90");
    std::sort(arches.begin(), arches.end());
    arches.erase(std::unique(arches.begin(), arches.end()), arches.end());
    return arches;
}

} // namespace kiln::tools
