#include "nvrtc_identity.hpp"
#include "nvrtc_library.hpp"

#include "elf_reader.hpp"
#include "log_line.hpp"

#include <nvrtc.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>

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
    if (dladdr(nvrtc_address(), &info) && info.dli_fname) {
        std::error_code ec;
        auto real = std::filesystem::canonical(info.dli_fname, ec);
        return ec ? std::string(info.dli_fname) : real.string();
    }
    return {};
}

struct Versions {
    std::string key, display;
};

} // namespace

// No file is opened and no path resolved, so a fresh process's first kernel does not wait for
// the file system.
std::string loaded_build_id(const void* address) {
    struct Search {
        ElfW(Addr) address;
        std::string id;
    } search{reinterpret_cast<ElfW(Addr)>(address), {}};
    dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) -> int {
            auto& s = *static_cast<Search*>(data);
            // Whether [begin, end) lies inside one readable loaded segment of this object.
            auto mapped = [info](ElfW(Addr) begin, ElfW(Addr) end, bool need_read) {
                for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
                    const ElfW(Phdr)& p = info->dlpi_phdr[i];
                    if (p.p_type != PT_LOAD || (need_read && !(p.p_flags & PF_R))) continue;
                    const ElfW(Addr) lo = info->dlpi_addr + p.p_vaddr;
                    if (begin >= lo && end <= lo + (need_read ? p.p_filesz : p.p_memsz) &&
                        begin <= end)
                        return true;
                }
                return false;
            };
            if (!mapped(s.address, s.address + 1, false)) return 0; // not this object
            for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
                const ElfW(Phdr)& p = info->dlpi_phdr[i];
                // No larger a note segment than the reader takes from the file.
                if (p.p_type != PT_NOTE || p.p_filesz > kElfFileReadLimit) continue;
                const ElfW(Addr) begin = info->dlpi_addr + p.p_vaddr;
                if (!mapped(begin, begin + p.p_filesz, true)) continue;
                // The mapped segment is the byte source: its notes are read in place.
                // NOLINTNEXTLINE(performance-no-int-to-ptr): the loader gives addresses as integers
                const std::string_view notes(reinterpret_cast<const char*>(begin), p.p_filesz);
                s.id =
                    build_id_in_notes(notes, p.p_align, __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
                if (!s.id.empty()) break;
            }
            return 1; // the object was found: stop
        },
        &search);
    return search.id;
}

namespace {

Versions compute() {
    int major = 0, minor = 0;
    nvrtcVersion(&major, &minor);
    const std::string short_version = std::to_string(major) + "." + std::to_string(minor);
    auto with_id = [&](const std::string& id) -> Versions {
        return {short_version + "+build." + id, short_version + " (build " + id.substr(0, 8) + ")"};
    };
    if (std::string id = loaded_build_id(nvrtc_address()); !id.empty()) return with_id(id);
    const std::string path = library_path();
    if (!path.empty())
        if (std::string id = elf_build_id(path); !id.empty()) return with_id(id);
    struct stat st {};
    if (path.empty() || ::stat(path.c_str(), &st) != 0) {
        std::string unknown = short_version + "+unknown-build";
        return {unknown, unknown};
    }
    // No build id (a rebuilt or stripped library): the version banner, found by reading the whole
    // file once per process.
    std::string version = scan_file(path);
    if (version.empty() || version.rfind(short_version, 0) != 0) {
        // No banner: the install's identity, still distinct per patch release (a replaced
        // library changes size or mtime).
        const std::string identity = path + "|" + std::to_string(st.st_size) + "|" +
                                     std::to_string(st.st_mtim.tv_sec) + "." +
                                     std::to_string(st.st_mtim.tv_nsec);
        version = short_version + "+" + std::to_string(std::hash<std::string>{}(identity));
        kiln::detail::log_debug("NVRTC build id and version banner not found in {}; using {}", path,
                                version);
    }
    return {version, version};
}

const Versions& versions() {
    static std::once_flag once;
    static Versions computed;
    std::call_once(once, [] { computed = compute(); });
    return computed;
}

} // namespace

std::string elf_build_id(const std::filesystem::path& path) {
    const std::optional<ElfReader> reader = ElfReader::open(ElfSource::file(path));
    return reader ? reader->build_id() : std::string();
}

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

const std::string& nvrtc_full_version() {
    return versions().key;
}

const std::string& nvrtc_display_version() {
    return versions().display;
}

const std::string& program_identity() {
    static const std::string identity = [] {
        // The loader's program headers lie in the main executable's first loaded segment.
        const auto headers = ::getauxval(AT_PHDR);
        if (headers != 0) {
            // NOLINTNEXTLINE(performance-no-int-to-ptr): the kernel gives the address as an integer
            std::string id = loaded_build_id(reinterpret_cast<const void*>(headers));
            if (!id.empty()) return "build-id:" + id;
        }
        std::error_code ec;
        const auto path = std::filesystem::canonical("/proc/self/exe", ec);
        struct stat st {};
        if (ec || ::stat(path.c_str(), &st) != 0) return std::string();
        return "file:" + path.string() + ":" + std::to_string(st.st_size) + ":" +
               std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
    }();
    return identity;
}

} // namespace kiln::detail
