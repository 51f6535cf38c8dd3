#include "arch_list.hpp"

#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <sstream>

namespace kiln::tools {

namespace {

// What the NVRTC in use compiles for, as "sm_75, sm_80, ...".
std::vector<int> supported_arches() {
    int count = 0;
    if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return {};
    std::vector<int> arches(static_cast<std::size_t>(count));
    if (nvrtcGetSupportedArchs(arches.data()) != NVRTC_SUCCESS) return {};
    return arches;
}

void check_supported(const std::string& arch) {
    std::string digits = arch.substr(3);
    if (!digits.empty() && !std::isdigit(static_cast<unsigned char>(digits.back())))
        digits.pop_back(); // sm_90a, sm_100f
    const std::vector<int> arches = supported_arches();
    if (arches.empty() ||
        std::find(arches.begin(), arches.end(), std::stoi(digits)) != arches.end())
        return;
    std::string list;
    for (int a : arches)
        list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a);
    throw ArgumentError("NVRTC " + nvrtc_version() + " does not compile for " + arch +
                        "; it compiles for " + list);
}

} // namespace

std::string parse_arch(const std::string& text) {
    if (text.rfind("compute_", 0) == 0)
        throw ArgumentError("--arch " + text +
                            " is a virtual architecture (PTX), but kiln compiles cubins, which "
                            "run on one real architecture: use --arch sm_" +
                            text.substr(8));
    std::string arch = text;
    // "9.0" and "10.0a", as nvidia-smi and CMake's CUDA_ARCHITECTURES docs write them.
    if (const auto dot = arch.find('.'); dot != std::string::npos && arch.rfind("sm_", 0) != 0)
        arch.erase(dot, 1);
    arch = normalize_arch(arch); // sm_XY[a|f], or ArgumentError
    check_supported(arch);
    return arch;
}

std::vector<std::string> parse_arch_list(const std::string& text) {
    std::vector<std::string> arches;
    std::stringstream in(text);
    std::string arch;
    while (std::getline(in, arch, ','))
        if (!arch.empty()) arches.push_back(parse_arch(arch));
    if (arches.empty()) throw ArgumentError("--arch needs at least one architecture, e.g. sm_90");
    std::sort(arches.begin(), arches.end());
    arches.erase(std::unique(arches.begin(), arches.end()), arches.end());
    return arches;
}

} // namespace kiln::tools
