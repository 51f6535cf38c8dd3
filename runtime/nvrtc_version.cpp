#include "nvrtc_version.hpp"

#include "kiln/log.hpp"

#include <nvrtc.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>

namespace kiln::detail {

namespace {

// NVRTC's PTX banner, also stored verbatim in the library: "Cuda compilation tools, release 13.0,
// V13.0.88". The printf template beside it ("release %d.%d,") is skipped by requiring a digit.
constexpr char kBanner[] = "Cuda compilation tools, release ";

std::string scan_file(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    struct stat st {};
    std::string found;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
        const auto size = static_cast<std::size_t>(st.st_size);
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            found = find_version_banner(static_cast<const char*>(map), size);
            ::munmap(map, size);
        }
    }
    ::close(fd);
    return found;
}

std::string library_path() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvrtcVersion), &info) && info.dli_fname) {
        std::error_code ec;
        auto real = std::filesystem::canonical(info.dli_fname, ec);
        return ec ? std::string(info.dli_fname) : real.string();
    }
    return {};
}

std::string compute(const std::filesystem::path& memo_dir) {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    const std::string short_version = std::to_string(major) + "." + std::to_string(minor);
    const std::string path = library_path();
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) return short_version + "+unknown-build";

    // Identity of this install: a replaced library (a patch upgrade) changes size or mtime.
    const std::string identity = path + "|" + std::to_string(st.st_size) + "|" +
                                 std::to_string(st.st_mtim.tv_sec) + "." +
                                 std::to_string(st.st_mtim.tv_nsec);
    std::filesystem::path memo;
    if (!memo_dir.empty()) {
        memo = memo_dir / ("nvrtc-version-" + std::to_string(std::hash<std::string>{}(identity)));
        std::ifstream in(memo);
        std::string stored_identity, stored_version;
        if (std::getline(in, stored_identity) && std::getline(in, stored_version) &&
            stored_identity == identity && !stored_version.empty())
            return stored_version;
    }

    std::string version = scan_file(path);
    if (version.empty() || version.rfind(short_version, 0) != 0) {
        // No banner: fall back to the install's identity, still distinct per patch release.
        version = short_version + "+" + std::to_string(std::hash<std::string>{}(identity));
        logger().debug("NVRTC version banner not found in {}; using {}", path, version);
    }
    if (!memo.empty()) {
        // Best effort and atomic: a memo is an optimization, never required.
        std::error_code ec;
        std::filesystem::create_directories(memo_dir, ec);
        auto temp = memo;
        temp += "." + std::to_string(::getpid()) + ".tmp";
        {
            std::ofstream out(temp, std::ios::trunc);
            out << identity << '\n' << version << '\n';
        }
        std::filesystem::rename(temp, memo, ec);
        if (ec) std::filesystem::remove(temp, ec);
    }
    return version;
}

} // namespace

std::string find_version_banner(const char* data, std::size_t size) {
    const std::size_t banner = sizeof kBanner - 1;
    const char* end = data + size;
    const char* at = data;
    while (at < end) {
        const void* hit = ::memmem(at, static_cast<std::size_t>(end - at), kBanner, banner);
        if (!hit) break;
        const char* p = static_cast<const char*>(hit) + banner;
        at = p;
        if (p >= end || !std::isdigit(static_cast<unsigned char>(*p))) continue;
        // "13.0, V13.0.88": take what follows ", V" up to a non-version character.
        const char* v = static_cast<const char*>(
            ::memmem(p, static_cast<std::size_t>(std::min<std::ptrdiff_t>(end - p, 32)), ", V", 3));
        if (!v) continue;
        v += 3;
        std::string version;
        while (v < end && (std::isdigit(static_cast<unsigned char>(*v)) || *v == '.'))
            version.push_back(*v++);
        if (!version.empty()) return version;
    }
    return {};
}

const std::string& nvrtc_full_version(const std::filesystem::path& memo_dir) {
    static std::once_flag once;
    static std::string version;
    std::call_once(once, [&] { version = compute(memo_dir); });
    return version;
}

} // namespace kiln::detail
