#pragma once
// Small ELF files built byte by byte for the tests of the ELF reader and its users: files of
// either class and byte order whose notes hold a build id (as NVRTC's library has one), and
// cubin-like files whose symbol table names kernels and variables. Built here rather than taken
// from the toolchain so that a test can damage every byte it knows the meaning of.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::test {

/// Builds ELF files whose note blocks are PT_NOTE segments or SHT_NOTE sections.
class ElfBuilder {
  public:
    ElfBuilder(bool is64, bool little_endian)
        : m_is64(is64)
        , m_little(little_endian) {}

    /// One note: owner name, type, descriptor; each padded to 4 bytes.
    std::string note(const std::string& name, std::uint32_t type, const std::string& desc) const;

    /// An ELF file whose note blocks are PT_NOTE segments (or, with @p as_sections, SHT_NOTE
    /// sections after a null section), the notes last in the file.
    std::string file(const std::vector<std::string>& blocks, bool as_sections = false) const;

  private:
    std::size_t word() const { return m_is64 ? 8 : 4; }
    void put(std::string& out, std::uint64_t value, std::size_t width) const;

    bool m_is64, m_little;
};

/// A symbol of symbol_elf().
struct ElfSymbolSpec {
    std::string name;
    unsigned info;  ///< binding << 4 | type
    unsigned other; ///< 0x10: a CUDA entry
};

/// A minimal ELF64 little-endian file laid out as NVRTC lays out the parts the cubin readers
/// read: sections [0] null, [1] .strtab, [2] .symtab (linked to 1), the section headers last; a
/// null symbol first, every other symbol in section 1.
std::string symbol_elf(const std::vector<ElfSymbolSpec>& symbols);

/// What NVRTC wrote for `extern "C" k`, the template instance fill<3> (a weak symbol) and a
/// __noinline__ device function (a FUNC that is no entry), with a section symbol and an object,
/// as a symbol_elf(): its kernels are "_Z4fillILi3EEvPi" and "k".
std::string sample_cubin();

/// Writes @p value's low @p width bytes little-endian at @p offset of @p bytes.
void put_le(std::string& bytes, std::size_t offset, std::uint64_t value, std::size_t width);

} // namespace kiln::test
