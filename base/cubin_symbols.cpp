// A cubin's kernels, variables and parameter sizes (kiln/cache/cubin_symbols.hpp), read with the
// ELF reader (elf_reader.hpp) from the bytes in memory, without copying them. The reader checks
// every table against the bytes; this file adds what is NVIDIA's: which symbols are kernels, and
// the records of a kernel's `.nv.info.NAME` section, whose sizes it checks as it walks them.

#include "kiln/cache/cubin_symbols.hpp"

#include "elf_reader.hpp"

#include <algorithm>
#include <cstdint>

namespace kiln::cache {

namespace {

using detail::ElfReader;
using detail::ElfSection;
using detail::ElfSymbol;

constexpr unsigned kObject = 1;       // STT_OBJECT
constexpr unsigned kFunction = 2;     // STT_FUNC
constexpr unsigned kCudaEntry = 0x10; // STO_CUDA_ENTRY
// .nv.info records: a format byte, an attribute byte, then a 16-bit field: a byte value and a pad
// (EIFMT_BVAL, which reductions' cubins carry), a 16-bit value (EIFMT_HVAL), or the size of the
// payload that follows (EIFMT_SVAL); EIFMT_NVAL has no field.
constexpr unsigned kNoValue = 1, kByteValue = 2, kHalfValue = 3, kSizedValue = 4;
constexpr unsigned kParamInfo = 0x17, kParamBytes = 0x19; // EIATTR_KPARAM_INFO, _CBANK_PARAM_SIZE

// A reader of @p elf when it is what NVRTC writes: a 64-bit little-endian ELF file.
std::optional<ElfReader> cubin_reader(std::string_view elf) {
    std::optional<ElfReader> reader = ElfReader::open(detail::ElfSource(elf));
    if (!reader || !reader->header().is64 || !reader->header().little_endian) return std::nullopt;
    return reader;
}

// The names of the symbols of @p elf's symbol table that @p keep accepts, in table order.
template <class Keep>
std::optional<std::vector<std::string>> symbol_names(std::string_view elf, Keep keep) {
    const std::optional<ElfReader> reader = cubin_reader(elf);
    if (!reader) return std::nullopt;
    const auto sections = reader->sections();
    if (!sections) return std::nullopt;
    const auto symbols = reader->symbols(*sections);
    if (!symbols) return std::nullopt;
    std::vector<std::string> names;
    for (std::uint64_t i = 0; i < symbols->count(); ++i) {
        const ElfSymbol symbol = symbols->at(i);
        if (!keep(symbol)) continue;
        const auto name = symbols->name(symbol);
        if (!name) return std::nullopt;
        names.emplace_back(*name);
    }
    return names;
}

// The records of a `.nv.info.NAME` section: the parameter sizes by ordinal.
std::optional<std::vector<std::size_t>> parameter_sizes(std::string_view info) {
    auto read_le = [&](std::size_t at, std::size_t width) {
        return detail::elf_field(info, at, width, true);
    };
    auto within = [&](std::uint64_t offset, std::uint64_t size) {
        return offset <= info.size() && size <= info.size() - offset;
    };
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
        const std::uint64_t value = read_le(at, 2);
        at += 2;
        if (format == kByteValue || format == kHalfValue) {
            if (format == kHalfValue && attribute == kParamBytes) total = value;
            continue;
        }
        if (format != kSizedValue || !within(at, value)) return std::nullopt;
        if (attribute == kParamInfo) {
            // index (4 bytes), ordinal (2), offset (2), flags (4): size in bits 18-31.
            if (value < 12) return std::nullopt;
            const std::uint64_t ordinal = read_le(at + 4, 2);
            const std::uint64_t param_offset = read_le(at + 6, 2);
            const std::uint64_t param_size = (read_le(at + 8, 4) >> 18) & 0x3fff;
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
    // Trusted only when the records agree: one per ordinal 0 .. n-1, the last parameter ending
    // where the total says.
    if (std::find(seen.begin(), seen.end(), false) != seen.end()) return std::nullopt;
    if (end != total.value_or(0)) return std::nullopt;
    return sizes;
}

} // namespace

std::optional<std::vector<std::string>> cubin_kernel_names(std::string_view elf) {
    return symbol_names(elf, [](const ElfSymbol& symbol) {
        return symbol.type() == kFunction && (symbol.other & kCudaEntry) != 0;
    });
}

std::optional<std::vector<std::string>> cubin_variable_names(std::string_view elf) {
    constexpr unsigned kUndefined = 0, kReservedSections = 0xff00; // SHN_UNDEF, SHN_LORESERVE
    auto names = symbol_names(elf, [](const ElfSymbol& symbol) {
        return symbol.type() == kObject && symbol.section != kUndefined &&
               symbol.section < kReservedSections;
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
    const std::optional<ElfReader> reader = cubin_reader(elf);
    if (!reader) return std::nullopt;
    const auto sections = reader->sections();
    if (!sections) return std::nullopt;
    const auto names = reader->section_names(*sections);
    if (!names) return std::nullopt;
    const std::string wanted = ".nv.info." + std::string(kernel);
    for (const ElfSection& section : *sections) {
        if (detail::elf_string(names->view(), section.name) != std::string_view(wanted)) continue;
        const auto info = reader->contents(section);
        if (!info) return std::nullopt;
        return parameter_sizes(info->view());
    }
    return std::nullopt;
}

} // namespace kiln::cache
