#include "kiln/cache/cubin_symbols.hpp"

#include <algorithm>
#include <cstdint>

namespace kiln::cache {

namespace {

// ELF64 constants and field offsets (the System V ABI's Elf64_Ehdr, Elf64_Shdr, Elf64_Sym).
constexpr std::size_t kElfHeaderSize = 64;
constexpr std::size_t kSectionHeaderSize = 64;
constexpr std::size_t kSymbolSize = 24;
constexpr unsigned kClass64 = 2, kLittleEndian = 1;
constexpr std::uint32_t kSymbolTable = 2; // SHT_SYMTAB
// .nv.info records: a format byte, an attribute byte, then a 16-bit field: a byte value and a pad
// (EIFMT_BVAL, which reductions' cubins carry), a 16-bit value (EIFMT_HVAL), or the size of the
// payload that follows (EIFMT_SVAL); EIFMT_NVAL has no field.
constexpr unsigned kNoValue = 1, kByteValue = 2, kHalfValue = 3, kSizedValue = 4;
constexpr unsigned kParamInfo = 0x17, kParamBytes = 0x19; // EIATTR_KPARAM_INFO, _CBANK_PARAM_SIZE
constexpr unsigned kObject = 1;                           // STT_OBJECT
constexpr unsigned kFunction = 2;                         // STT_FUNC
constexpr unsigned kCudaEntry = 0x10;                     // STO_CUDA_ENTRY

// Little-endian reads at an offset already checked to lie within the bytes.
std::uint64_t read_le(std::string_view bytes, std::size_t offset, int size) {
    std::uint64_t value = 0;
    for (int i = size - 1; i >= 0; --i)
        value =
            (value << 8) | static_cast<unsigned char>(bytes[offset + static_cast<std::size_t>(i)]);
    return value;
}

// Whether [offset, offset + size) lies within @p total, without overflow.
bool within(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
    return offset <= total && size <= total - offset;
}

struct Section {
    std::uint32_t name = 0;
    std::uint32_t type = 0;
    std::uint64_t offset = 0, size = 0, entry_size = 0;
    std::uint32_t link = 0;
};

// Where a 64-bit little-endian ELF file's section headers are, checked to lie within it.
struct SectionTable {
    std::uint64_t offset = 0, header_size = 0, count = 0, names_index = 0;

    // The header of section @p index (below count: within the file, checked when made).
    Section section(std::string_view elf, std::uint64_t index) const {
        const std::size_t at = static_cast<std::size_t>(offset + index * header_size);
        Section s;
        s.name = static_cast<std::uint32_t>(read_le(elf, at, 4));
        s.type = static_cast<std::uint32_t>(read_le(elf, at + 4, 4));
        s.offset = read_le(elf, at + 24, 8);
        s.size = read_le(elf, at + 32, 8);
        s.link = static_cast<std::uint32_t>(read_le(elf, at + 40, 4));
        s.entry_size = read_le(elf, at + 56, 8);
        return s;
    }
};
std::optional<SectionTable> section_table(std::string_view elf) {
    if (elf.size() < kElfHeaderSize ||
        elf.substr(0, 4) != "\x7f"
                            "ELF" ||
        static_cast<unsigned char>(elf[4]) != kClass64 ||
        static_cast<unsigned char>(elf[5]) != kLittleEndian)
        return std::nullopt;
    SectionTable t;
    t.offset = read_le(elf, 0x28, 8);
    t.header_size = read_le(elf, 0x3a, 2);
    t.count = read_le(elf, 0x3c, 2);
    t.names_index = read_le(elf, 0x3e, 2);
    if (t.header_size < kSectionHeaderSize ||
        !within(t.offset, t.count * t.header_size, elf.size()))
        return std::nullopt;
    return t;
}

// The names of the symbols of @p elf's symbol table that @p keep(info, other, section index)
// accepts, in table order.
template <class Keep>
std::optional<std::vector<std::string>> symbol_names(std::string_view elf, Keep keep) {
    const std::optional<SectionTable> table = section_table(elf);
    if (!table) return std::nullopt;
    const std::uint64_t count = table->count;
    auto section = [&](std::uint64_t index) { return table->section(elf, index); };
    for (std::uint64_t index = 0; index < count; ++index) {
        const Section symbols = section(index);
        if (symbols.type != kSymbolTable) continue;
        if (symbols.link >= count || symbols.entry_size < kSymbolSize ||
            !within(symbols.offset, symbols.size, elf.size()))
            return std::nullopt;
        const Section strings = section(symbols.link);
        if (!within(strings.offset, strings.size, elf.size())) return std::nullopt;
        const std::string_view names = elf.substr(static_cast<std::size_t>(strings.offset),
                                                  static_cast<std::size_t>(strings.size));
        std::vector<std::string> kernels;
        const std::uint64_t symbol_count = symbols.size / symbols.entry_size;
        for (std::uint64_t i = 0; i < symbol_count; ++i) {
            // Within the table: i * entry_size + kSymbolSize <= size, checked above.
            const auto offset = static_cast<std::size_t>(symbols.offset + i * symbols.entry_size);
            const auto info = static_cast<unsigned>(read_le(elf, offset + 4, 1));
            const auto other = static_cast<unsigned>(read_le(elf, offset + 5, 1));
            const auto section_index = static_cast<unsigned>(read_le(elf, offset + 6, 2));
            if (!keep(info, other, section_index)) continue;
            const std::uint64_t name = read_le(elf, offset, 4);
            if (name >= names.size()) return std::nullopt;
            const std::size_t end = names.find('\0', static_cast<std::size_t>(name));
            if (end == std::string_view::npos) return std::nullopt;
            kernels.emplace_back(names.substr(static_cast<std::size_t>(name), end - name));
        }
        return kernels;
    }
    return std::nullopt;
}

} // namespace

std::optional<std::vector<std::string>> cubin_kernel_names(std::string_view elf) {
    return symbol_names(elf, [](unsigned info, unsigned other, unsigned) {
        return (info & 0xf) == kFunction && (other & kCudaEntry) != 0;
    });
}

std::optional<std::vector<std::string>> cubin_variable_names(std::string_view elf) {
    constexpr unsigned kUndefined = 0, kReservedSections = 0xff00; // SHN_UNDEF, SHN_LORESERVE
    auto names = symbol_names(elf, [](unsigned info, unsigned, unsigned section) {
        return (info & 0xf) == kObject && section != kUndefined && section < kReservedSections;
    });
    // Names that start with '.' or "__" are the toolchain's own (reserved shared memory, say).
    if (names)
        names->erase(std::remove_if(names->begin(), names->end(),
                                    [](const std::string& name) {
                                        return name.empty() || name[0] == '.' ||
                                               name.rfind("__", 0) == 0;
                                    }),
                     names->end());
    return names;
}

std::optional<std::vector<std::size_t>> cubin_parameter_sizes(std::string_view elf,
                                                              std::string_view kernel) {
    const std::optional<SectionTable> table = section_table(elf);
    if (!table || table->names_index >= table->count) return std::nullopt;
    const Section names_section = table->section(elf, table->names_index);
    if (!within(names_section.offset, names_section.size, elf.size())) return std::nullopt;
    const std::string_view names = elf.substr(static_cast<std::size_t>(names_section.offset),
                                              static_cast<std::size_t>(names_section.size));
    const std::string wanted = ".nv.info." + std::string(kernel);
    for (std::uint64_t index = 0; index < table->count; ++index) {
        const Section section = table->section(elf, index);
        if (section.name >= names.size() || names.substr(section.name, wanted.size() + 1) !=
                                                std::string_view(wanted.c_str(), wanted.size() + 1))
            continue;
        if (!within(section.offset, section.size, elf.size())) return std::nullopt;
        const std::string_view info = elf.substr(static_cast<std::size_t>(section.offset),
                                                 static_cast<std::size_t>(section.size));
        std::vector<std::size_t> sizes;
        std::vector<bool> seen;
        std::uint64_t end = 0; // of the last parameter
        std::optional<std::uint64_t> total;
        for (std::size_t at = 0; at + 2 <= info.size();) {
            const auto format = static_cast<unsigned char>(info[at]);
            const auto attribute = static_cast<unsigned char>(info[at + 1]);
            at += 2;
            if (format == kNoValue) continue;
            if (at + 2 > info.size()) return std::nullopt;
            const std::uint64_t value = read_le(info, at, 2);
            at += 2;
            if (format == kByteValue || format == kHalfValue) {
                if (format == kHalfValue && attribute == kParamBytes) total = value;
                continue;
            }
            if (format != kSizedValue || !within(at, value, info.size())) return std::nullopt;
            if (attribute == kParamInfo) {
                // index (4 bytes), ordinal (2), offset (2), flags (4): size in bits 18-31.
                if (value < 12) return std::nullopt;
                const std::uint64_t ordinal = read_le(info, at + 4, 2);
                const std::uint64_t param_offset = read_le(info, at + 6, 2);
                const std::uint64_t param_size = (read_le(info, at + 8, 4) >> 18) & 0x3fff;
                // Ordinals below the record count (checked below, when all are read).
                if (ordinal >= info.size()) return std::nullopt;
                if (ordinal >= sizes.size()) {
                    sizes.resize(static_cast<std::size_t>(ordinal) + 1);
                    seen.resize(sizes.size());
                }
                if (seen[ordinal]) return std::nullopt;
                seen[ordinal] = true;
                sizes[ordinal] = static_cast<std::size_t>(param_size);
                end = std::max(end, param_offset + param_size);
            }
            at += static_cast<std::size_t>(value);
        }
        // Trusted only when the records agree: one per ordinal 0 .. n-1, the last parameter
        // ending where the total says.
        if (std::find(seen.begin(), seen.end(), false) != seen.end()) return std::nullopt;
        if (end != total.value_or(0)) return std::nullopt;
        return sizes;
    }
    return std::nullopt;
}

} // namespace kiln::cache
