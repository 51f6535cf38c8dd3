#include "cuda_include.hpp"
#include "nvrtc_library.hpp"

#include "kiln/settings.hpp"

#include <nvrtc.h>

#include <dlfcn.h>

#include <filesystem>

namespace kiln::detail {

namespace {

std::string find() {
    if (auto dir = settings::text(Variable::cuda_include); !dir.empty()) return dir;
    // NVRTC lives in <toolkit>/lib64 (or lib); its headers in <toolkit>/include.
    Dl_info info{};
    if (dladdr(nvrtc_address(), &info) && info.dli_fname) {
        std::error_code ec;
        const auto library = std::filesystem::canonical(info.dli_fname, ec);
        if (!ec) {
            const auto include = library.parent_path().parent_path() / "include";
            if (std::filesystem::exists(include / "cuda_fp16.h", ec)) return include.string();
        }
    }
    return KILN_CUDA_INCLUDE_DIR;
}

} // namespace

const std::string& cuda_include_dir() {
    static const std::string dir = find();
    return dir;
}

} // namespace kiln::detail

namespace kiln::detail {

const std::vector<std::string>& cuda_include_options() {
    static const std::vector<std::string> options = [] {
        std::vector<std::string> o{"-I" + cuda_include_dir()};
        std::error_code ec;
        const auto cccl = std::filesystem::path(cuda_include_dir()) / "cccl";
        if (std::filesystem::is_directory(cccl, ec)) o.push_back("-I" + cccl.string());
        return o;
    }();
    return options;
}

} // namespace kiln::detail
