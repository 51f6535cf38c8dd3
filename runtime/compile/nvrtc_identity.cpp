#include "nvrtc_identity.hpp"

#include "kiln/log.hpp"

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
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>

namespace kiln::detail {

namespace {

// NVRTC's PTX banner, also stored verbatim in the library: "Cuda compilation tools, release 13.0,
// V13.0.88". The printf template beside it ("release %d.%d,") is skipped by requiring a digit.
constexpr char kBanner[] = "Cuda compilation tools, release ";

// Bounds on what the build-id reader reads, so a damaged or hostile file cannot make it read much.
constexpr std::uint64_t kMaxHeaderBytes = 64 << 10; // all program (or section) headers together
constexpr std::uint64_t kMaxNoteBytes = 64 << 10;   // one note segment or section
constexpr std::uint32_t kMaxBuildIdBytes = 64;      // GNU ld writes 16 (md5) or 20 (sha1)

// An open file read with pread, never past its size.
class File {
  public:
    explicit File(const std::filesystem::path& path)
        : m_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)) {
        struct stat st {};
        if (m_fd >= 0 && ::fstat(m_fd, &st) == 0 && S_ISREG(st.st_mode))
            m_size = static_cast<std::uint64_t>(st.st_size);
    }
    ~File() {
        if (m_fd >= 0) ::close(m_fd);
    }
    File(const File&) = delete;
    File& operator=(const File&) = delete;

    // Exactly @p count bytes at @p offset into @p out; false if the file is shorter.
    bool read(std::uint64_t offset, std::uint64_t count, std::string& out) const {
        if (offset > m_size || count > m_size - offset) return false;
        out.resize(static_cast<std::size_t>(count));
        std::size_t done = 0;
        while (done < out.size()) {
            const ssize_t n =
                ::pread(m_fd, &out[done], out.size() - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return false;
            done += static_cast<std::size_t>(n);
        }
        return true;
    }

  private:
    int m_fd;
    std::uint64_t m_size = 0;
};

// Fields of an ELF file of either class and byte order.
class Fields {
  public:
    explicit Fields(bool little)
        : m_little(little) {}
    std::uint64_t get(const std::string& bytes, std::size_t at, std::size_t width) const {
        std::uint64_t value = 0;
        for (std::size_t i = 0; i < width; ++i) {
            const auto byte =
                static_cast<unsigned char>(bytes[at + (m_little ? width - 1 - i : i)]);
            value = (value << 8) | byte;
        }
        return value;
    }

  private:
    bool m_little;
};

std::uint64_t round_up(std::uint64_t value, std::uint64_t align) {
    return (value + align - 1) / align * align;
}

// The build id among the notes of one segment or section, as hex; empty if none.
std::string build_id_in_notes(const std::string& notes, std::uint64_t align, const Fields& f) {
    // Notes are 4-byte aligned, or 8-byte in a segment aligned so (GNU property notes).
    const std::uint64_t step = align == 8 ? 8 : 4;
    std::uint64_t at = 0;
    while (notes.size() - at >= 12) {
        const std::uint64_t name_size = f.get(notes, at, 4);
        const std::uint64_t desc_size = f.get(notes, at + 4, 4);
        const std::uint64_t type = f.get(notes, at + 8, 4);
        const std::uint64_t name_at = at + 12;
        const std::uint64_t desc_at = name_at + round_up(name_size, step);
        if (desc_at > notes.size() || desc_size > notes.size() - desc_at) break;
        if (type == NT_GNU_BUILD_ID && name_size == 4 && notes.compare(name_at, 4, "GNU", 4) == 0 &&
            desc_size > 0 && desc_size <= kMaxBuildIdBytes) {
            static constexpr char kHex[] = "0123456789abcdef";
            std::string hex;
            for (std::uint64_t i = 0; i < desc_size; ++i) {
                const auto byte = static_cast<unsigned char>(notes[desc_at + i]);
                hex.push_back(kHex[byte >> 4]);
                hex.push_back(kHex[byte & 15]);
            }
            return hex;
        }
        at = desc_at + round_up(desc_size, step);
        if (at > notes.size()) break;
    }
    return {};
}

// Where the headers of one kind (program or section) are and how they are laid out.
struct HeaderTable {
    std::uint64_t offset, entry_size, count;
    std::uint32_t note_type;                           // PT_NOTE or SHT_NOTE
    std::size_t type_at, offset_at, size_at, align_at; // field positions within an entry
    std::size_t min_entry_size;
};

std::string build_id_in_table(const File& file, const HeaderTable& t, const Fields& f,
                              std::size_t word) {
    if (t.count == 0 || t.entry_size < t.min_entry_size || t.count * t.entry_size > kMaxHeaderBytes)
        return {};
    std::string headers;
    if (!file.read(t.offset, t.count * t.entry_size, headers)) return {};
    for (std::uint64_t i = 0; i < t.count; ++i) {
        const std::size_t entry = static_cast<std::size_t>(i * t.entry_size);
        if (f.get(headers, entry + t.type_at, 4) != t.note_type) continue;
        const std::uint64_t size = f.get(headers, entry + t.size_at, word);
        if (size > kMaxNoteBytes) continue;
        std::string notes;
        if (!file.read(f.get(headers, entry + t.offset_at, word), size, notes)) continue;
        std::string id = build_id_in_notes(notes, f.get(headers, entry + t.align_at, word), f);
        if (!id.empty()) return id;
    }
    return {};
}

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
                if (p.p_type != PT_NOTE || p.p_filesz > kMaxNoteBytes) continue;
                const ElfW(Addr) begin = info->dlpi_addr + p.p_vaddr;
                if (!mapped(begin, begin + p.p_filesz, true)) continue;
                // NOLINTNEXTLINE(performance-no-int-to-ptr): the loader gives addresses as integers
                const std::string notes(reinterpret_cast<const char*>(begin), p.p_filesz);
                s.id = build_id_in_notes(notes, p.p_align,
                                         Fields(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__));
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
    if (std::string id = loaded_build_id(reinterpret_cast<const void*>(&nvrtcVersion)); !id.empty())
        return with_id(id);
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
        logger().debug("NVRTC build id and version banner not found in {}; using {}", path,
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
    const File file(path);
    std::string header;
    if (!file.read(0, EI_NIDENT, header) || header.compare(0, SELFMAG, ELFMAG) != 0) return {};
    const bool is64 = header[EI_CLASS] == ELFCLASS64;
    if (!is64 && header[EI_CLASS] != ELFCLASS32) return {};
    if (header[EI_DATA] != ELFDATA2LSB && header[EI_DATA] != ELFDATA2MSB) return {};
    const Fields f(header[EI_DATA] == ELFDATA2LSB);
    if (!file.read(0, is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr), header)) return {};

    const std::size_t word = is64 ? 8 : 4;
    HeaderTable program{};
    program.note_type = PT_NOTE;
    program.type_at = offsetof(Elf64_Phdr, p_type);
    if (is64) {
        program.offset = f.get(header, offsetof(Elf64_Ehdr, e_phoff), 8);
        program.entry_size = f.get(header, offsetof(Elf64_Ehdr, e_phentsize), 2);
        program.count = f.get(header, offsetof(Elf64_Ehdr, e_phnum), 2);
        program.offset_at = offsetof(Elf64_Phdr, p_offset);
        program.size_at = offsetof(Elf64_Phdr, p_filesz);
        program.align_at = offsetof(Elf64_Phdr, p_align);
        program.min_entry_size = sizeof(Elf64_Phdr);
    } else {
        program.offset = f.get(header, offsetof(Elf32_Ehdr, e_phoff), 4);
        program.entry_size = f.get(header, offsetof(Elf32_Ehdr, e_phentsize), 2);
        program.count = f.get(header, offsetof(Elf32_Ehdr, e_phnum), 2);
        program.offset_at = offsetof(Elf32_Phdr, p_offset);
        program.size_at = offsetof(Elf32_Phdr, p_filesz);
        program.align_at = offsetof(Elf32_Phdr, p_align);
        program.min_entry_size = sizeof(Elf32_Phdr);
    }
    std::string id = build_id_in_table(file, program, f, word);
    if (!id.empty()) return id;

    // No note segment (an object file, or one linked without it): the note sections.
    HeaderTable sections{};
    sections.note_type = SHT_NOTE;
    sections.type_at = offsetof(Elf64_Shdr, sh_type);
    if (is64) {
        sections.offset = f.get(header, offsetof(Elf64_Ehdr, e_shoff), 8);
        sections.entry_size = f.get(header, offsetof(Elf64_Ehdr, e_shentsize), 2);
        sections.count = f.get(header, offsetof(Elf64_Ehdr, e_shnum), 2);
        sections.offset_at = offsetof(Elf64_Shdr, sh_offset);
        sections.size_at = offsetof(Elf64_Shdr, sh_size);
        sections.align_at = offsetof(Elf64_Shdr, sh_addralign);
        sections.min_entry_size = sizeof(Elf64_Shdr);
    } else {
        sections.offset = f.get(header, offsetof(Elf32_Ehdr, e_shoff), 4);
        sections.entry_size = f.get(header, offsetof(Elf32_Ehdr, e_shentsize), 2);
        sections.count = f.get(header, offsetof(Elf32_Ehdr, e_shnum), 2);
        sections.offset_at = offsetof(Elf32_Shdr, sh_offset);
        sections.size_at = offsetof(Elf32_Shdr, sh_size);
        sections.align_at = offsetof(Elf32_Shdr, sh_addralign);
        sections.min_entry_size = sizeof(Elf32_Shdr);
    }
    return build_id_in_table(file, sections, f, word);
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
