// The ELF reader (elf_reader.hpp). Every field is decoded from bytes already checked to hold it;
// offsets and sizes come from the file and are checked against the source before anything is
// read, with arithmetic that cannot overflow (counts and entry sizes are 16-bit fields).

#include "elf_reader.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <utility>

namespace kiln::detail {

namespace {

// Fields of a little-endian file can be copied as they lie on a little-endian host.
constexpr bool kHostLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

std::uint64_t round_up(std::uint64_t value, std::uint64_t align) {
    return (value + align - 1) / align * align;
}

// The bytes of a table of @p count entries of @p entry_size at @p offset, each at least
// @p min_entry_size; nullopt when it does not lie within the source. No entries read as none,
// wherever the (unused) table would be.
std::optional<ElfBytes> table(const ElfSource& source, std::uint64_t offset,
                              std::uint64_t entry_size, std::uint64_t count,
                              std::size_t min_entry_size) {
    if (count == 0) return ElfBytes::borrowed({});
    if (entry_size < min_entry_size) return std::nullopt;
    return source.read(offset, count * entry_size);
}

} // namespace

ElfBytes ElfBytes::borrowed(std::string_view view) {
    ElfBytes bytes;
    bytes.m_view = view;
    return bytes;
}

ElfBytes ElfBytes::owned(std::string copy) {
    ElfBytes bytes;
    bytes.m_copy = std::move(copy);
    bytes.m_owns = true;
    return bytes;
}

ElfSource ElfSource::file(const std::filesystem::path& path) {
    ElfSource source;
    // O_NONBLOCK: a FIFO planted at the path must not block the open; it is refused below.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return source;
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        return source;
    }
    source.m_fd = fd;
    source.m_size = static_cast<std::uint64_t>(st.st_size);
    return source;
}

ElfSource::ElfSource(ElfSource&& other) noexcept
    : m_memory(std::exchange(other.m_memory, {}))
    , m_size(std::exchange(other.m_size, 0))
    , m_fd(std::exchange(other.m_fd, -1)) {}

ElfSource& ElfSource::operator=(ElfSource&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0) ::close(m_fd);
        m_memory = std::exchange(other.m_memory, {});
        m_size = std::exchange(other.m_size, 0);
        m_fd = std::exchange(other.m_fd, -1);
    }
    return *this;
}

ElfSource::~ElfSource() {
    if (m_fd >= 0) ::close(m_fd);
}

std::optional<ElfBytes> ElfSource::read(std::uint64_t offset, std::uint64_t count) const {
    if (offset > m_size || count > m_size - offset) return std::nullopt;
    if (m_fd < 0)
        return ElfBytes::borrowed(
            m_memory.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(count)));
    if (count > kElfFileReadLimit) return std::nullopt;
    std::string out(static_cast<std::size_t>(count), '\0');
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n =
            ::pread(m_fd, &out[done], out.size() - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return std::nullopt; // an error, or the file shrank since it was opened
        done += static_cast<std::size_t>(n);
    }
    return ElfBytes::owned(std::move(out));
}

ElfSymbols::ElfSymbols(ElfBytes entries, ElfBytes names, std::uint64_t entry_size, bool is64,
                       bool little_endian)
    : m_entries(std::move(entries))
    , m_names(std::move(names))
    , m_entry_size(entry_size)
    , m_is64(is64)
    , m_little_endian(little_endian) {}

ElfSymbol ElfSymbols::at(std::uint64_t index) const {
    const std::string_view bytes = m_entries.view();
    const auto at = static_cast<std::size_t>(index * m_entry_size);
    auto get = [&](std::size_t offset, std::size_t width) {
        return elf_field(bytes, at + offset, width, m_little_endian);
    };
    ElfSymbol symbol;
    if (m_is64 && m_little_endian && kHostLittleEndian) { // as sections() does
        Elf64_Sym raw;
        std::memcpy(&raw, bytes.data() + at, sizeof raw);
        symbol.name = raw.st_name;
        symbol.info = raw.st_info;
        symbol.other = raw.st_other;
        symbol.section = raw.st_shndx;
        symbol.value = raw.st_value;
        symbol.size = raw.st_size;
    } else if (m_is64) {
        symbol.name = static_cast<std::uint32_t>(get(offsetof(Elf64_Sym, st_name), 4));
        symbol.info = static_cast<unsigned char>(get(offsetof(Elf64_Sym, st_info), 1));
        symbol.other = static_cast<unsigned char>(get(offsetof(Elf64_Sym, st_other), 1));
        symbol.section = static_cast<std::uint16_t>(get(offsetof(Elf64_Sym, st_shndx), 2));
        symbol.value = get(offsetof(Elf64_Sym, st_value), 8);
        symbol.size = get(offsetof(Elf64_Sym, st_size), 8);
    } else {
        symbol.name = static_cast<std::uint32_t>(get(offsetof(Elf32_Sym, st_name), 4));
        symbol.value = get(offsetof(Elf32_Sym, st_value), 4);
        symbol.size = get(offsetof(Elf32_Sym, st_size), 4);
        symbol.info = static_cast<unsigned char>(get(offsetof(Elf32_Sym, st_info), 1));
        symbol.other = static_cast<unsigned char>(get(offsetof(Elf32_Sym, st_other), 1));
        symbol.section = static_cast<std::uint16_t>(get(offsetof(Elf32_Sym, st_shndx), 2));
    }
    return symbol;
}

std::optional<std::string_view> ElfSymbols::name(const ElfSymbol& symbol) const {
    return elf_string(m_names.view(), symbol.name);
}

ElfNotes::ElfNotes(std::string_view bytes, std::uint64_t align, bool little_endian)
    : m_bytes(bytes)
    , m_step(align == 8 ? 8 : 4)
    , m_little_endian(little_endian) {}

std::optional<ElfNote> ElfNotes::next() {
    const std::uint64_t size = m_bytes.size();
    constexpr std::uint64_t kHeaderSize = 12; // namesz, descsz, type: 4 bytes each in both classes
    if (size - m_at < kHeaderSize) return std::nullopt;
    const auto at = static_cast<std::size_t>(m_at);
    const std::uint64_t name_size = elf_field(m_bytes, at, 4, m_little_endian);
    const std::uint64_t desc_size = elf_field(m_bytes, at + 4, 4, m_little_endian);
    const std::uint64_t name_at = m_at + kHeaderSize;
    // The descriptor and the next note start at the alignment, counted from the note's start
    // (gABI; binutils' ELF_NOTE_DESC_OFFSET): after "GNU\0", 16 bytes in, with either alignment.
    // Sizes are 32-bit, so these sums cannot overflow.
    const std::uint64_t desc_at = m_at + round_up(kHeaderSize + name_size, m_step);
    if (desc_at > size || desc_size > size - desc_at) {
        m_at = size;
        return std::nullopt;
    }
    ElfNote note;
    note.type = static_cast<std::uint32_t>(elf_field(m_bytes, at + 8, 4, m_little_endian));
    note.name = m_bytes.substr(static_cast<std::size_t>(name_at), name_size);
    note.desc = m_bytes.substr(static_cast<std::size_t>(desc_at), desc_size);
    const std::uint64_t next = m_at + round_up(desc_at - m_at + desc_size, m_step);
    m_at = next > size ? size : next; // the last note's padding may be cut off
    return note;
}

std::string build_id_in_notes(std::string_view notes, std::uint64_t align, bool little_endian) {
    constexpr std::size_t kMaxBuildIdBytes = 64; // GNU ld writes 16 (md5) or 20 (sha1)
    ElfNotes walk(notes, align, little_endian);
    while (const std::optional<ElfNote> note = walk.next()) {
        if (note->type != NT_GNU_BUILD_ID || note->name != std::string_view("GNU\0", 4) ||
            note->desc.empty() || note->desc.size() > kMaxBuildIdBytes)
            continue;
        static constexpr char kHex[] = "0123456789abcdef";
        std::string hex;
        hex.reserve(note->desc.size() * 2);
        for (const char c : note->desc) {
            const auto byte = static_cast<unsigned char>(c);
            hex.push_back(kHex[byte >> 4]);
            hex.push_back(kHex[byte & 15]);
        }
        return hex;
    }
    return {};
}

std::optional<std::string_view> elf_string(std::string_view table, std::uint64_t offset) {
    if (offset >= table.size()) return std::nullopt;
    const auto begin = static_cast<std::size_t>(offset);
    const std::size_t end = table.find('\0', begin);
    if (end == std::string_view::npos) return std::nullopt;
    return table.substr(begin, end - begin);
}

std::optional<ElfReader> ElfReader::open(ElfSource source) {
    const std::optional<ElfBytes> ident = source.read(0, EI_NIDENT);
    if (!ident) return std::nullopt;
    const std::string_view id = ident->view();
    if (id.substr(0, SELFMAG) != std::string_view(ELFMAG, SELFMAG)) return std::nullopt;
    const auto elf_class = static_cast<unsigned char>(id[EI_CLASS]);
    const auto data = static_cast<unsigned char>(id[EI_DATA]);
    if ((elf_class != ELFCLASS32 && elf_class != ELFCLASS64) ||
        (data != ELFDATA2LSB && data != ELFDATA2MSB))
        return std::nullopt;

    ElfHeader h;
    h.is64 = elf_class == ELFCLASS64;
    h.little_endian = data == ELFDATA2LSB;
    const std::optional<ElfBytes> whole =
        source.read(0, h.is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr));
    if (!whole) return std::nullopt;
    const std::string_view b = whole->view();
    auto get = [&](std::size_t offset, std::size_t width) {
        return elf_field(b, offset, width, h.little_endian);
    };
    auto get16 = [&](std::size_t offset) { return static_cast<std::uint16_t>(get(offset, 2)); };
    if (h.is64) {
        h.type = get16(offsetof(Elf64_Ehdr, e_type));
        h.machine = get16(offsetof(Elf64_Ehdr, e_machine));
        h.program_headers = get(offsetof(Elf64_Ehdr, e_phoff), 8);
        h.section_headers = get(offsetof(Elf64_Ehdr, e_shoff), 8);
        h.program_header_size = get16(offsetof(Elf64_Ehdr, e_phentsize));
        h.program_header_count = get16(offsetof(Elf64_Ehdr, e_phnum));
        h.section_header_size = get16(offsetof(Elf64_Ehdr, e_shentsize));
        h.section_header_count = get16(offsetof(Elf64_Ehdr, e_shnum));
        h.section_names_index = get16(offsetof(Elf64_Ehdr, e_shstrndx));
    } else {
        h.type = get16(offsetof(Elf32_Ehdr, e_type));
        h.machine = get16(offsetof(Elf32_Ehdr, e_machine));
        h.program_headers = get(offsetof(Elf32_Ehdr, e_phoff), 4);
        h.section_headers = get(offsetof(Elf32_Ehdr, e_shoff), 4);
        h.program_header_size = get16(offsetof(Elf32_Ehdr, e_phentsize));
        h.program_header_count = get16(offsetof(Elf32_Ehdr, e_phnum));
        h.section_header_size = get16(offsetof(Elf32_Ehdr, e_shentsize));
        h.section_header_count = get16(offsetof(Elf32_Ehdr, e_shnum));
        h.section_names_index = get16(offsetof(Elf32_Ehdr, e_shstrndx));
    }
    return ElfReader(std::move(source), h);
}

ElfReader::ElfReader(ElfSource source, const ElfHeader& header)
    : m_source(std::move(source))
    , m_header(header) {}

std::optional<std::vector<ElfSegment>> ElfReader::segments() const {
    const ElfHeader& h = m_header;
    const std::optional<ElfBytes> bytes =
        table(m_source, h.program_headers, h.program_header_size, h.program_header_count,
              h.is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr));
    if (!bytes) return std::nullopt;
    std::vector<ElfSegment> segments(h.program_header_count);
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const std::size_t at = i * h.program_header_size;
        auto get = [&](std::size_t offset, std::size_t width) {
            return elf_field(bytes->view(), at + offset, width, h.little_endian);
        };
        ElfSegment& s = segments[i];
        if (h.is64) {
            s.type = static_cast<std::uint32_t>(get(offsetof(Elf64_Phdr, p_type), 4));
            s.flags = static_cast<std::uint32_t>(get(offsetof(Elf64_Phdr, p_flags), 4));
            s.offset = get(offsetof(Elf64_Phdr, p_offset), 8);
            s.address = get(offsetof(Elf64_Phdr, p_vaddr), 8);
            s.file_size = get(offsetof(Elf64_Phdr, p_filesz), 8);
            s.memory_size = get(offsetof(Elf64_Phdr, p_memsz), 8);
            s.align = get(offsetof(Elf64_Phdr, p_align), 8);
        } else {
            s.type = static_cast<std::uint32_t>(get(offsetof(Elf32_Phdr, p_type), 4));
            s.flags = static_cast<std::uint32_t>(get(offsetof(Elf32_Phdr, p_flags), 4));
            s.offset = get(offsetof(Elf32_Phdr, p_offset), 4);
            s.address = get(offsetof(Elf32_Phdr, p_vaddr), 4);
            s.file_size = get(offsetof(Elf32_Phdr, p_filesz), 4);
            s.memory_size = get(offsetof(Elf32_Phdr, p_memsz), 4);
            s.align = get(offsetof(Elf32_Phdr, p_align), 4);
        }
    }
    return segments;
}

std::optional<std::vector<ElfSection>> ElfReader::sections() const {
    const ElfHeader& h = m_header;
    const std::optional<ElfBytes> bytes =
        table(m_source, h.section_headers, h.section_header_size, h.section_header_count,
              h.is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr));
    if (!bytes) return std::nullopt;
    std::vector<ElfSection> sections(h.section_header_count);
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const std::size_t at = i * h.section_header_size;
        auto get = [&](std::size_t offset, std::size_t width) {
            return elf_field(bytes->view(), at + offset, width, h.little_endian);
        };
        auto get32 = [&](std::size_t offset) { return static_cast<std::uint32_t>(get(offset, 4)); };
        ElfSection& s = sections[i];
        if (h.is64 && h.little_endian && kHostLittleEndian) {
            // What NVRTC and the host's linker write: the header as it lies (the table holds
            // entry_size >= sizeof(Elf64_Shdr) bytes per entry, checked above).
            Elf64_Shdr raw;
            std::memcpy(&raw, bytes->view().data() + at, sizeof raw);
            s.name = raw.sh_name;
            s.type = raw.sh_type;
            s.flags = raw.sh_flags;
            s.address = raw.sh_addr;
            s.offset = raw.sh_offset;
            s.size = raw.sh_size;
            s.link = raw.sh_link;
            s.info = raw.sh_info;
            s.align = raw.sh_addralign;
            s.entry_size = raw.sh_entsize;
        } else if (h.is64) {
            s.name = get32(offsetof(Elf64_Shdr, sh_name));
            s.type = get32(offsetof(Elf64_Shdr, sh_type));
            s.flags = get(offsetof(Elf64_Shdr, sh_flags), 8);
            s.address = get(offsetof(Elf64_Shdr, sh_addr), 8);
            s.offset = get(offsetof(Elf64_Shdr, sh_offset), 8);
            s.size = get(offsetof(Elf64_Shdr, sh_size), 8);
            s.link = get32(offsetof(Elf64_Shdr, sh_link));
            s.info = get32(offsetof(Elf64_Shdr, sh_info));
            s.align = get(offsetof(Elf64_Shdr, sh_addralign), 8);
            s.entry_size = get(offsetof(Elf64_Shdr, sh_entsize), 8);
        } else {
            s.name = get32(offsetof(Elf32_Shdr, sh_name));
            s.type = get32(offsetof(Elf32_Shdr, sh_type));
            s.flags = get32(offsetof(Elf32_Shdr, sh_flags));
            s.address = get32(offsetof(Elf32_Shdr, sh_addr));
            s.offset = get32(offsetof(Elf32_Shdr, sh_offset));
            s.size = get32(offsetof(Elf32_Shdr, sh_size));
            s.link = get32(offsetof(Elf32_Shdr, sh_link));
            s.info = get32(offsetof(Elf32_Shdr, sh_info));
            s.align = get32(offsetof(Elf32_Shdr, sh_addralign));
            s.entry_size = get32(offsetof(Elf32_Shdr, sh_entsize));
        }
    }
    return sections;
}

std::optional<ElfBytes> ElfReader::section_names(const std::vector<ElfSection>& sections) const {
    if (m_header.section_names_index >= sections.size()) return std::nullopt;
    return contents(sections[m_header.section_names_index]);
}

std::optional<ElfSymbols> ElfReader::symbols(const std::vector<ElfSection>& sections) const {
    for (const ElfSection& table : sections) {
        if (table.type != SHT_SYMTAB) continue;
        const std::uint64_t min_entry_size = m_header.is64 ? sizeof(Elf64_Sym) : sizeof(Elf32_Sym);
        if (table.link >= sections.size() || table.entry_size < min_entry_size) return std::nullopt;
        std::optional<ElfBytes> entries = contents(table);
        if (!entries) return std::nullopt;
        std::optional<ElfBytes> names = contents(sections[table.link]);
        if (!names) return std::nullopt;
        return ElfSymbols(std::move(*entries), std::move(*names), table.entry_size, m_header.is64,
                          m_header.little_endian);
    }
    return std::nullopt;
}

std::string ElfReader::build_id() const {
    if (const auto segments = this->segments()) {
        for (const ElfSegment& segment : *segments) {
            if (segment.type != PT_NOTE) continue;
            const std::optional<ElfBytes> notes = contents(segment);
            if (!notes) continue;
            std::string id =
                build_id_in_notes(notes->view(), segment.align, m_header.little_endian);
            if (!id.empty()) return id;
        }
    }
    // No note segment (an object file, or one linked without it): the note sections.
    if (const auto sections = this->sections()) {
        for (const ElfSection& section : *sections) {
            if (section.type != SHT_NOTE) continue;
            const std::optional<ElfBytes> notes = contents(section);
            if (!notes) continue;
            std::string id =
                build_id_in_notes(notes->view(), section.align, m_header.little_endian);
            if (!id.empty()) return id;
        }
    }
    return {};
}

} // namespace kiln::detail
