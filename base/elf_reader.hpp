#pragma once
// Kiln reads ELF files in two places: the cubins it compiles and caches (their kernels, variables
// and parameter sizes) and the NVRTC library it links (its GNU build id, part of every cache key).
// A cubin comes from the cache, which may be damaged or planted; the library is ~100 MB, of which
// only the first page is wanted. So this one reader works over bytes in memory or a file read with
// pread on demand, checks every offset, size and count against the bytes there are, and answers a
// damaged or hostile file with nullopt or "not found": it never reads outside the source, never
// reads a file whole and never throws.
//
// Both classes (32- and 64-bit) and both byte orders are read: build ids are read from whatever
// ELF file is named. Callers that know their files (cubins are 64-bit little-endian) check
// header() themselves.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// The most a file source reads at once: the ELF header, one table of headers, one note segment
/// or section. A larger range reads as absent, so a hostile file cannot make the reader read much.
constexpr std::uint64_t kElfFileReadLimit = 64 << 10;

/// A range of a source's bytes: a view into memory, or a copy read from a file.
class ElfBytes {
  public:
    /// @p view's bytes, borrowed: they must outlive this.
    static ElfBytes borrowed(std::string_view view);
    static ElfBytes owned(std::string bytes);

    std::string_view view() const { return m_owns ? std::string_view(m_copy) : m_view; }

  private:
    std::string m_copy;
    std::string_view m_view;
    bool m_owns = false;
};

/// What an ElfReader reads: bytes in memory, or a regular file read with pread, a range at a time.
class ElfSource {
  public:
    /// Bytes in memory, borrowed: they must outlive the source and every ElfBytes read from it.
    explicit ElfSource(std::string_view bytes)
        : m_memory(bytes)
        , m_size(bytes.size()) {}
    /// The regular file at @p path, opened read-only (without blocking on a FIFO); a source with
    /// no bytes when it cannot be opened or is no regular file.
    static ElfSource file(const std::filesystem::path& path);

    ElfSource(ElfSource&& other) noexcept;
    ElfSource& operator=(ElfSource&& other) noexcept;
    ElfSource(const ElfSource&) = delete;
    ElfSource& operator=(const ElfSource&) = delete;
    ~ElfSource();

    std::uint64_t size() const { return m_size; }
    /// Exactly the bytes [@p offset, @p offset + @p count), or nullopt when they do not all lie
    /// within the source, cannot be read, or (from a file) are more than kElfFileReadLimit.
    std::optional<ElfBytes> read(std::uint64_t offset, std::uint64_t count) const;

  private:
    ElfSource() = default;

    std::string_view m_memory;
    std::uint64_t m_size = 0;
    int m_fd = -1; // a file source when not -1
};

/// The fields of the ELF header that locate the rest (System V ABI, Elf32_Ehdr/Elf64_Ehdr).
struct ElfHeader {
    bool is64 = false;
    bool little_endian = false;
    std::uint16_t type = 0, machine = 0;
    std::uint64_t program_headers = 0, section_headers = 0; // file offsets
    std::uint16_t program_header_size = 0, program_header_count = 0;
    std::uint16_t section_header_size = 0, section_header_count = 0;
    std::uint16_t section_names_index = 0;
};

/// A program header (Elf32_Phdr/Elf64_Phdr).
struct ElfSegment {
    std::uint32_t type = 0, flags = 0;
    std::uint64_t offset = 0, address = 0, file_size = 0, memory_size = 0, align = 0;
};

/// A section header (Elf32_Shdr/Elf64_Shdr). name is an offset into the section names.
struct ElfSection {
    std::uint32_t name = 0, type = 0;
    std::uint64_t flags = 0, address = 0, offset = 0, size = 0;
    std::uint32_t link = 0, info = 0;
    std::uint64_t align = 0, entry_size = 0;
};

/// A symbol (Elf32_Sym/Elf64_Sym). name is an offset into its table's strings.
struct ElfSymbol {
    std::uint32_t name = 0;
    unsigned char info = 0, other = 0;
    std::uint16_t section = 0;
    std::uint64_t value = 0, size = 0;

    unsigned type() const { return info & 0xfu; } // STT_*
};

/// A symbol table and the strings that name its symbols, as ElfReader::symbols() read them.
class ElfSymbols {
  public:
    /// How many whole entries the table holds (none when an entry is larger than the table).
    std::uint64_t count() const { return m_entries.view().size() / m_entry_size; }
    /// Symbol @p index, which must be below count().
    ElfSymbol at(std::uint64_t index) const;
    /// @p symbol's name, or nullopt when it lies outside the strings or is not terminated there.
    std::optional<std::string_view> name(const ElfSymbol& symbol) const;

  private:
    friend class ElfReader;
    ElfSymbols(ElfBytes entries, ElfBytes names, std::uint64_t entry_size, bool is64,
               bool little_endian);

    ElfBytes m_entries, m_names;
    std::uint64_t m_entry_size; // at least a symbol's size, checked when read
    bool m_is64, m_little_endian;
};

/// A note (Elf32_Nhdr/Elf64_Nhdr and what follows it), viewing the bytes it was read from.
struct ElfNote {
    std::uint32_t type = 0;
    std::string_view name; ///< the owner's name as stored: "GNU\0" for GNU's notes
    std::string_view desc;
};

/// The notes of one note segment or section, in order, up to the first that does not fit.
class ElfNotes {
  public:
    /// @p bytes the segment's or section's contents (viewed, not copied); @p align its alignment
    /// (8 aligns notes to 8 bytes, anything else to 4, as the GNU tools do).
    ElfNotes(std::string_view bytes, std::uint64_t align, bool little_endian);

    /// The next note, or nullopt after the last or at one that does not fit.
    std::optional<ElfNote> next();

  private:
    std::string_view m_bytes;
    std::uint64_t m_at = 0, m_step;
    bool m_little_endian;
};

/// The GNU build id (an NT_GNU_BUILD_ID note of owner "GNU", 1 to 64 bytes) among the notes of
/// one segment or section, as lowercase hex; empty when there is none.
std::string build_id_in_notes(std::string_view notes, std::uint64_t align, bool little_endian);

/// The unsigned field of @p width bytes (at most 8) at @p at of @p bytes, in the given byte order;
/// the caller has checked that it lies within @p bytes. Inline: a first call from disk decodes a
/// cubin's section and symbol tables field by field, and a call per field was most of its time.
inline std::uint64_t elf_field(std::string_view bytes, std::size_t at, std::size_t width,
                               bool little_endian) {
    const char* field = bytes.data() + at;
    std::uint64_t value = 0;
    if (little_endian) {
        for (std::size_t i = width; i > 0; --i)
            value = (value << 8) | static_cast<unsigned char>(field[i - 1]);
    } else {
        for (std::size_t i = 0; i < width; ++i)
            value = (value << 8) | static_cast<unsigned char>(field[i]);
    }
    return value;
}

/// The NUL-terminated string at @p offset of a string table, or nullopt when @p offset lies
/// outside it or the string is not terminated within it.
std::optional<std::string_view> elf_string(std::string_view table, std::uint64_t offset);

/// An ELF file read through its source: the header read once, everything else on demand.
class ElfReader {
  public:
    /// The reader of @p source, or nullopt when it does not start with a whole ELF header of a
    /// known class (ELFCLASS32/64) and byte order (ELFDATA2LSB/MSB).
    static std::optional<ElfReader> open(ElfSource source);

    const ElfHeader& header() const { return m_header; }

    /// The program headers, in one read; nullopt when their table lies outside the source or
    /// an entry is smaller than a program header.
    std::optional<std::vector<ElfSegment>> segments() const;
    /// The section headers, in one read, as segments(). A file of 65280 sections or more (whose
    /// count is stored in section 0, ELF's extended numbering) reads as having none.
    std::optional<std::vector<ElfSection>> sections() const;
    /// The section names (the contents of section header().section_names_index of @p sections);
    /// nullopt when that index or its contents lie outside.
    std::optional<ElfBytes> section_names(const std::vector<ElfSection>& sections) const;
    /// The bytes [@p offset, @p offset + @p size) of the source, as ElfSource::read.
    std::optional<ElfBytes> bytes(std::uint64_t offset, std::uint64_t size) const {
        return m_source.read(offset, size);
    }
    /// A segment's or section's contents in the file.
    std::optional<ElfBytes> contents(const ElfSegment& segment) const {
        return bytes(segment.offset, segment.file_size);
    }
    std::optional<ElfBytes> contents(const ElfSection& section) const {
        return bytes(section.offset, section.size);
    }
    /// The first SHT_SYMTAB section of @p sections with its strings (the section its link
    /// names); nullopt when there is none, or it, its entry size or its strings are damaged.
    std::optional<ElfSymbols> symbols(const std::vector<ElfSection>& sections) const;

    /// The GNU build id as lowercase hex, from the PT_NOTE segments, else (for files linked
    /// without them) the SHT_NOTE sections; empty when there is none or it cannot be read.
    std::string build_id() const;

  private:
    ElfReader(ElfSource source, const ElfHeader& header);

    ElfSource m_source;
    ElfHeader m_header;
};

} // namespace kiln::detail
