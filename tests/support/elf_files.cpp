// The ELF files of elf_files.hpp, laid out by the System V ABI's ELF header, program, section,
// symbol and note formats.

#include "elf_files.hpp"

namespace kiln::test {

void ElfBuilder::put(std::string& out, std::uint64_t value, std::size_t width) const {
    for (std::size_t i = 0; i < width; ++i) {
        const std::size_t shift = 8 * (m_little ? i : width - 1 - i);
        out.push_back(static_cast<char>((value >> shift) & 0xff));
    }
}

std::string ElfBuilder::note(const std::string& name, std::uint32_t type,
                             const std::string& desc) const {
    std::string out;
    put(out, name.size() + 1, 4);
    put(out, desc.size(), 4);
    put(out, type, 4);
    out += name;
    out.push_back('\0');
    out.resize((out.size() + 3) / 4 * 4, '\0');
    out += desc;
    out.resize((out.size() + 3) / 4 * 4, '\0');
    return out;
}

std::string ElfBuilder::file(const std::vector<std::string>& blocks, bool as_sections) const {
    const std::uint64_t header_size = m_is64 ? 64 : 52;
    const std::uint64_t entry_size = as_sections ? (m_is64 ? 64 : 40) : (m_is64 ? 56 : 32);
    const std::uint64_t entries = blocks.size() + (as_sections ? 1 : 0);
    const std::uint64_t table = header_size;
    std::uint64_t data = table + entries * entry_size;

    std::string out = {'\x7f',
                       'E',
                       'L',
                       'F',
                       static_cast<char>(m_is64 ? 2 : 1),
                       static_cast<char>(m_little ? 1 : 2),
                       1};
    out.resize(16, '\0');
    put(out, 3, 2);  // ET_DYN
    put(out, 62, 2); // EM_X86_64
    put(out, 1, 4);  // EV_CURRENT
    put(out, 0, word());
    put(out, as_sections ? 0 : table, word());
    put(out, as_sections ? table : 0, word());
    put(out, 0, 4);
    put(out, header_size, 2);
    put(out, as_sections ? 0 : entry_size, 2);
    put(out, as_sections ? 0 : entries, 2);
    put(out, as_sections ? entry_size : 0, 2);
    put(out, as_sections ? entries : 0, 2);
    put(out, 0, 2);

    if (as_sections) out.append(entry_size, '\0'); // SHN_UNDEF
    for (const std::string& block : blocks) {
        if (as_sections) {
            put(out, 0, 4);
            put(out, 7, 4); // SHT_NOTE
            put(out, 2, word());
            put(out, 0, word());
            put(out, data, word());
            put(out, block.size(), word());
            put(out, 0, 4);
            put(out, 0, 4);
            put(out, 4, word());
            put(out, 0, word());
        } else if (m_is64) {
            put(out, 4, 4); // PT_NOTE
            put(out, 4, 4); // PF_R
            for (std::uint64_t value : {data, data, data, std::uint64_t(block.size()),
                                        std::uint64_t(block.size()), std::uint64_t(4)})
                put(out, value, 8);
        } else {
            put(out, 4, 4);
            for (std::uint64_t value :
                 {data, data, data, std::uint64_t(block.size()), std::uint64_t(block.size()),
                  std::uint64_t(4), std::uint64_t(4)})
                put(out, value, 4);
        }
        data += block.size();
    }
    for (const std::string& block : blocks)
        out += block;
    return out;
}

void put_le(std::string& bytes, std::size_t offset, std::uint64_t value, std::size_t width) {
    for (std::size_t i = 0; i < width; ++i)
        bytes[offset + i] = static_cast<char>(value >> (8 * i));
}

std::string symbol_elf(const std::vector<ElfSymbolSpec>& symbols) {
    std::string strings(1, '\0');
    std::string table(24, '\0');
    for (const auto& symbol : symbols) {
        std::string entry(24, '\0');
        put_le(entry, 0, strings.size(), 4);
        put_le(entry, 4, symbol.info, 1);
        put_le(entry, 5, symbol.other, 1);
        put_le(entry, 6, 1, 2);
        table += entry;
        strings += symbol.name + '\0';
    }
    std::string elf(64, '\0');
    elf.replace(0, 4,
                "\x7f"
                "ELF");
    elf[4] = 2; // 64-bit
    elf[5] = 1; // little-endian
    elf[6] = 1;
    const std::size_t strings_at = elf.size();
    elf += strings;
    while (elf.size() % 8)
        elf.push_back('\0');
    const std::size_t table_at = elf.size();
    elf += table;
    const std::size_t sections_at = elf.size();
    elf += std::string(std::size_t{3} * 64, '\0');
    put_le(elf, 0x28, sections_at, 8);
    put_le(elf, 0x3a, 64, 2);
    put_le(elf, 0x3c, 3, 2);
    put_le(elf, sections_at + 64 + 4, 3, 4); // SHT_STRTAB
    put_le(elf, sections_at + 64 + 24, strings_at, 8);
    put_le(elf, sections_at + 64 + 32, strings.size(), 8);
    put_le(elf, sections_at + 128 + 4, 2, 4); // SHT_SYMTAB
    put_le(elf, sections_at + 128 + 24, table_at, 8);
    put_le(elf, sections_at + 128 + 32, table.size(), 8);
    put_le(elf, sections_at + 128 + 40, 1, 4);
    put_le(elf, sections_at + 128 + 56, 24, 8);
    return elf;
}

std::string sample_cubin() {
    return symbol_elf({{"", 0x03, 0},
                       {"_Z4fillILi3EEvPi", 0x22, 0x10},
                       {".nv.reservedSmem.offset0", 0x21, 0},
                       {"_Z5twicef", 0x12, 0},
                       {"k", 0x12, 0x10}});
}

} // namespace kiln::test
