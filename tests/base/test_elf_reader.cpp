// The ELF reader (base/elf_reader.hpp) that the cubin symbols and NVRTC's build id are read with:
// real files read both ways (this test program from its file, from its bytes in memory and from
// its loaded note segment; a cubin NVRTC compiles here), crafted files of either class and byte
// order, and damaged ones: every truncation, offsets and counts that point outside, sizes that
// overflow, unknown classes and byte orders. Damage gives nothing, never a crash (the sanitizer
// builds check that no byte outside the source is read).

#include "elf_reader.hpp"

#include "compile/nvrtc_identity.hpp"
#include "elf_files.hpp"
#include "kiln/compiler.hpp"
#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <elf.h>
#include <sys/auxv.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <random>
#include <regex>
#include <string>
#include <vector>

using kiln::detail::build_id_in_notes;
using kiln::detail::ElfNote;
using kiln::detail::ElfNotes;
using kiln::detail::ElfReader;
using kiln::detail::ElfSection;
using kiln::detail::ElfSource;
using kiln::test::ElfBuilder;
using kiln::test::put_le;
using kiln::test::TempDir;

namespace {

// Holds a zero byte, so a reader that stops at one would be caught.
const std::string
    kId("\x01\x23\x45\x67\x89\xab\xcd\xef\x10\x32\x54\x76\x98\xba\xdc\xfe\x00\x11\x22\x33", 20);
const std::string kIdHex = "0123456789abcdef1032547698badcfe00112233";
const std::string kAbiTag(16, '\x03');

// A small ELF64 little-endian file whose one PT_NOTE segment holds an ABI tag and the build id.
std::string notes_elf() {
    const ElfBuilder elf(true, true);
    return elf.file({elf.note("GNU", 1, kAbiTag) + elf.note("GNU", NT_GNU_BUILD_ID, kId)});
}

std::string this_program() {
    return std::filesystem::canonical("/proc/self/exe").string();
}

std::string build_id_of(std::string_view bytes) {
    const auto reader = ElfReader::open(ElfSource(bytes));
    return reader ? reader->build_id() : std::string();
}

std::string build_id_of_file(const TempDir& dir, const std::string& bytes) {
    kiln::test::write_file(dir / "elf", bytes);
    const auto reader = ElfReader::open(ElfSource::file(dir / "elf"));
    return reader ? reader->build_id() : std::string();
}

// Everything the reader offers, over whatever @p bytes hold; what it gives stays within them.
void read_everything(std::string_view bytes) {
    const auto reader = ElfReader::open(ElfSource(bytes));
    if (!reader) return;
    const std::string id = reader->build_id();
    EXPECT_LE(id.size(), 128u);
    if (const auto segments = reader->segments()) {
        for (const auto& segment : *segments)
            if (const auto contents = reader->contents(segment)) {
                EXPECT_LE(contents->view().size(), bytes.size());
                ElfNotes notes(contents->view(), segment.align, reader->header().little_endian);
                while (const auto note = notes.next())
                    EXPECT_LE(note->name.size() + note->desc.size(), bytes.size());
            }
    }
    const auto sections = reader->sections();
    if (!sections) return;
    if (const auto names = reader->section_names(*sections))
        for (const ElfSection& section : *sections)
            if (const auto name = kiln::detail::elf_string(names->view(), section.name)) {
                EXPECT_LT(name->size(), bytes.size());
            }
    if (const auto symbols = reader->symbols(*sections)) {
        EXPECT_LE(symbols->count(), bytes.size());
        for (std::uint64_t i = 0; i < symbols->count(); ++i)
            if (const auto name = symbols->name(symbols->at(i))) {
                EXPECT_LT(name->size(), bytes.size());
            }
    }
}

} // namespace

TEST(ElfReader, ReadsThisProgramsBuildIdFromItsFileFromMemoryAndAsLoaded) {
    const std::string path = this_program();
    const auto from_file = ElfReader::open(ElfSource::file(path));
    ASSERT_TRUE(from_file);
    const std::string id = from_file->build_id();
    ASSERT_FALSE(id.empty()) << "the test executable was linked without a build id";
    EXPECT_TRUE(from_file->header().is64);
    EXPECT_TRUE(from_file->header().little_endian);

    const std::string bytes = kiln::test::read_file(path);
    EXPECT_EQ(build_id_of(bytes), id) << "the whole file in memory";
    // The loaded note segment, as the NVRTC identity reads the library it uses.
    const auto headers = ::getauxval(AT_PHDR);
    ASSERT_NE(headers, 0u);
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the kernel gives the address as an integer
    EXPECT_EQ(kiln::detail::loaded_build_id(reinterpret_cast<const void*>(headers)), id);

    const auto readelf = kiln::test::run_command("readelf -n '" + path + "'");
    if (readelf.status == 0) {
        std::smatch match;
        ASSERT_TRUE(std::regex_search(readelf.out, match, std::regex("Build ID: ([0-9a-f]+)")));
        EXPECT_EQ(match[1].str(), id);
    }
}

TEST(ElfReader, ReadsThisProgramsHeadersSectionsAndSymbols) {
    const std::string bytes = kiln::test::read_file(this_program());
    const auto reader = ElfReader::open(ElfSource(bytes));
    ASSERT_TRUE(reader);
    const auto segments = reader->segments();
    ASSERT_TRUE(segments);
    auto has = [&](std::uint32_t type) {
        return std::any_of(segments->begin(), segments->end(),
                           [&](const auto& segment) { return segment.type == type; });
    };
    EXPECT_TRUE(has(PT_LOAD));
    EXPECT_TRUE(has(PT_NOTE));
    // Each note segment, 8-aligned ones (GNU properties) too, is walked to its end.
    for (const auto& segment : *segments) {
        if (segment.type != PT_NOTE) continue;
        const auto contents = reader->contents(segment);
        ASSERT_TRUE(contents);
        ElfNotes notes(contents->view(), segment.align, true);
        std::size_t walked = 0, count = 0;
        while (const auto note = notes.next()) {
            ++count;
            walked = static_cast<std::size_t>(note->desc.data() + note->desc.size() -
                                              contents->view().data());
        }
        EXPECT_GT(count, 0u) << "the note segment at " << segment.offset;
        EXPECT_GT(walked + segment.align, contents->view().size()) << segment.offset;
    }

    const auto sections = reader->sections();
    ASSERT_TRUE(sections);
    const auto names = reader->section_names(*sections);
    ASSERT_TRUE(names);
    std::vector<std::string> section_names;
    for (const ElfSection& section : *sections)
        section_names.emplace_back(
            kiln::detail::elf_string(names->view(), section.name).value_or("?"));
    EXPECT_NE(std::find(section_names.begin(), section_names.end(), ".note.gnu.build-id"),
              section_names.end());

    const auto symbols = reader->symbols(*sections);
    ASSERT_TRUE(symbols) << "the test executable has no symbol table";
    bool found_main = false;
    for (std::uint64_t i = 0; i < symbols->count(); ++i) {
        const auto symbol = symbols->at(i);
        if (symbols->name(symbol) == std::string_view("main") && symbol.type() == STT_FUNC)
            found_main = true;
    }
    EXPECT_TRUE(found_main);
}

TEST(ElfReader, ReadsACubinInPlace) {
    kiln::CompileOptions options = kiln::CompileOptions::for_arch("sm_90");
    options.use_disk_cache = false;
    const auto program =
        kiln::compile(R"(extern "C" __global__ void k(float* out) { out[0] = 1; })", options);
    const std::string& cubin = program->cubin();
    const auto reader = ElfReader::open(ElfSource(cubin));
    ASSERT_TRUE(reader);
    EXPECT_TRUE(reader->header().is64);
    EXPECT_TRUE(reader->header().little_endian);
    EXPECT_EQ(reader->header().machine, EM_CUDA);
    const auto sections = reader->sections();
    ASSERT_TRUE(sections);
    const auto names = reader->section_names(*sections);
    ASSERT_TRUE(names);
    // Views into the cubin, not copies.
    EXPECT_GE(names->view().data(), cubin.data());
    EXPECT_LE(names->view().data() + names->view().size(), cubin.data() + cubin.size());
    bool found_info = false;
    for (const ElfSection& section : *sections)
        found_info |=
            kiln::detail::elf_string(names->view(), section.name) == std::string_view(".nv.info.k");
    EXPECT_TRUE(found_info);
    const auto symbols = reader->symbols(*sections);
    ASSERT_TRUE(symbols);
    bool found_kernel = false;
    for (std::uint64_t i = 0; i < symbols->count(); ++i)
        found_kernel |= symbols->name(symbols->at(i)) == std::string_view("k");
    EXPECT_TRUE(found_kernel);
}

TEST(ElfReader, ReadsEitherClassAndByteOrderFromSegmentsOrSections) {
    for (bool is64 : {true, false}) {
        for (bool little : {true, false}) {
            const ElfBuilder elf(is64, little);
            const std::string notes =
                elf.note("GNU", 1, kAbiTag) + elf.note("GNU", NT_GNU_BUILD_ID, kId);
            const std::string as_segments = elf.file({notes});
            const auto reader = ElfReader::open(ElfSource(as_segments));
            ASSERT_TRUE(reader);
            EXPECT_EQ(reader->header().is64, is64);
            EXPECT_EQ(reader->header().little_endian, little);
            EXPECT_EQ(reader->build_id(), kIdHex) << (is64 ? 64 : 32) << (little ? " LSB" : " MSB");
            EXPECT_EQ(build_id_of(elf.file({elf.note("GNU", 1, kAbiTag), notes}, true)), kIdHex)
                << "sections, " << (is64 ? 64 : 32) << (little ? " LSB" : " MSB");
        }
    }
}

TEST(ElfReader, UnknownClassesAndByteOrdersAreRefused) {
    const std::string good = notes_elf();
    for (const char elf_class : {'\0', '\3', '\xff'}) {
        std::string bytes = good;
        bytes[EI_CLASS] = elf_class;
        EXPECT_FALSE(ElfReader::open(ElfSource(bytes))) << int(elf_class);
    }
    for (const char data : {'\0', '\3', '\xff'}) {
        std::string bytes = good;
        bytes[EI_DATA] = data;
        EXPECT_FALSE(ElfReader::open(ElfSource(bytes))) << int(data);
    }
    // A little-endian file marked big-endian, and one marked 32-bit: read as such, they point
    // nowhere.
    std::string big = good;
    big[EI_DATA] = ELFDATA2MSB;
    EXPECT_EQ(build_id_of(big), "");
    std::string narrow = good;
    narrow[EI_CLASS] = ELFCLASS32;
    EXPECT_EQ(build_id_of(narrow), "");
    for (const std::string& bytes : {std::string(),
                                     std::string("\x7f"
                                                 "ELF"),
                                     std::string(4096, 'x'), good.substr(0, 63)})
        EXPECT_FALSE(ElfReader::open(ElfSource(bytes))) << bytes.size() << " bytes";
}

TEST(ElfReader, EveryTruncationGivesNothing) {
    TempDir dir;
    const std::string notes = notes_elf();
    ASSERT_EQ(build_id_of(notes), kIdHex);
    ASSERT_EQ(build_id_of_file(dir, notes), kIdHex);
    for (std::size_t size = 0; size < notes.size(); ++size) {
        EXPECT_EQ(build_id_of(notes.substr(0, size)), "") << size << " bytes";
        EXPECT_EQ(build_id_of_file(dir, notes.substr(0, size)), "") << size << " bytes, a file";
    }
    // The section headers come last: a cut cubin has no sections (and so no symbols).
    const std::string cubin = kiln::test::sample_cubin();
    for (std::size_t size = 0; size < cubin.size(); ++size) {
        const auto reader = ElfReader::open(ElfSource(std::string_view(cubin).substr(0, size)));
        EXPECT_TRUE(!reader || !reader->sections()) << size << " bytes";
    }
}

TEST(ElfReader, OffsetsCountsAndSizesThatPointOutsideAreRefused) {
    const std::string good = notes_elf();
    constexpr std::size_t kSegment = sizeof(Elf64_Ehdr); // the one program header
    constexpr std::size_t kNotes = kSegment + sizeof(Elf64_Phdr);
    auto with = [&](std::size_t offset, std::uint64_t value, std::size_t width) {
        std::string bytes = good;
        put_le(bytes, offset, value, width);
        return bytes;
    };
    const std::uint64_t huge = ~std::uint64_t{0};
    for (const std::string& bytes :
         {with(offsetof(Elf64_Ehdr, e_phoff), huge - 10, 8),
          with(offsetof(Elf64_Ehdr, e_phoff), good.size() - 8, 8),
          with(offsetof(Elf64_Ehdr, e_phnum), 0xffff, 2),
          with(offsetof(Elf64_Ehdr, e_phentsize), 0, 2),
          with(offsetof(Elf64_Ehdr, e_phentsize), sizeof(Elf64_Phdr) - 1, 2),
          with(offsetof(Elf64_Ehdr, e_phentsize), 0xffff, 2),
          with(kSegment + offsetof(Elf64_Phdr, p_offset), huge, 8),
          with(kSegment + offsetof(Elf64_Phdr, p_offset), good.size(), 8),
          with(kSegment + offsetof(Elf64_Phdr, p_filesz), huge, 8),
          with(kSegment + offsetof(Elf64_Phdr, p_filesz), good.size(), 8),
          with(kNotes, 0xffffffff, 4),      // the first note's name size
          with(kNotes + 4, 0xffffffff, 4),  // its descriptor's size
          with(kNotes + 4, 0xfffffffd, 4)}) // sums that would wrap in 32 bits
        EXPECT_EQ(build_id_of(bytes), "");

    const std::string cubin = kiln::test::sample_cubin();
    const std::size_t section_headers = cubin.size() - 3 * sizeof(Elf64_Shdr);
    const std::size_t symtab = section_headers + 2 * sizeof(Elf64_Shdr);
    auto cubin_with = [&](std::size_t offset, std::uint64_t value, std::size_t width) {
        std::string bytes = cubin;
        put_le(bytes, offset, value, width);
        return bytes;
    };
    auto symbols_of = [](const std::string& bytes) {
        const auto reader = ElfReader::open(ElfSource(bytes));
        const auto sections = reader ? reader->sections() : std::nullopt;
        return sections ? reader->symbols(*sections) : std::nullopt;
    };
    ASSERT_TRUE(symbols_of(cubin));
    EXPECT_EQ(symbols_of(cubin)->count(), 6u);
    for (const std::string& bytes :
         {cubin_with(offsetof(Elf64_Ehdr, e_shoff), huge - 10, 8),
          cubin_with(offsetof(Elf64_Ehdr, e_shnum), 60000, 2),
          cubin_with(offsetof(Elf64_Ehdr, e_shentsize), 63, 2),
          cubin_with(symtab + offsetof(Elf64_Shdr, sh_size), huge, 8),
          cubin_with(symtab + offsetof(Elf64_Shdr, sh_offset), cubin.size() - 8, 8),
          cubin_with(symtab + offsetof(Elf64_Shdr, sh_link), 3, 4),
          cubin_with(symtab + offsetof(Elf64_Shdr, sh_entsize), 0, 8),
          cubin_with(symtab + offsetof(Elf64_Shdr, sh_entsize), 23, 8),
          cubin_with(section_headers + sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size), 1u << 30,
                     8)})
        EXPECT_FALSE(symbols_of(bytes));
    // An entry larger than the table: a table of no symbols, not one read past its end.
    const auto wide =
        symbols_of(cubin_with(symtab + offsetof(Elf64_Shdr, sh_entsize), huge / 2, 8));
    ASSERT_TRUE(wide);
    EXPECT_EQ(wide->count(), 0u);
}

TEST(ElfReader, DamagedFilesNeverCrash) {
    const ElfBuilder narrow(false, false);
    const std::vector<std::string> goods = {
        notes_elf(), kiln::test::sample_cubin(),
        narrow.file({narrow.note("GNU", 1, kAbiTag) + narrow.note("GNU", NT_GNU_BUILD_ID, kId)},
                    true)};
    std::mt19937 random(35);
    for (int round = 0; round < 20000; ++round) {
        const std::string& good = goods[static_cast<std::size_t>(round) % goods.size()];
        std::string bytes = good.substr(0, random() % (good.size() + 1));
        const int flips = 1 + static_cast<int>(random() % 4);
        for (int i = 0; i < flips && !bytes.empty(); ++i) {
            const unsigned choice = random() % 3;
            bytes[random() % bytes.size()] = choice == 0   ? '\xff'
                                             : choice == 1 ? '\0'
                                                           : static_cast<char>(random());
        }
        read_everything(bytes);
    }
}

TEST(ElfReader, AFileSourceReadsOnlySmallRanges) {
    TempDir dir;
    // A note segment larger than a file read may be: found in memory, not read from the file.
    const ElfBuilder elf(true, true);
    const std::string padding =
        elf.note("GNU", 1, std::string(kiln::detail::kElfFileReadLimit, 'p'));
    const std::string large = elf.file({padding + elf.note("GNU", NT_GNU_BUILD_ID, kId)});
    EXPECT_EQ(build_id_of(large), kIdHex);
    EXPECT_EQ(build_id_of_file(dir, large), "");

    const ElfSource source = ElfSource::file(dir / "elf");
    EXPECT_EQ(source.size(), large.size());
    EXPECT_TRUE(source.read(0, kiln::detail::kElfFileReadLimit));
    EXPECT_FALSE(source.read(0, kiln::detail::kElfFileReadLimit + 1));
    EXPECT_FALSE(source.read(large.size() - 1, 2));
    EXPECT_FALSE(source.read(~std::uint64_t{0}, 1));
    EXPECT_TRUE(source.read(large.size(), 0));
}

TEST(ElfReader, WhatIsNoRegularFileHasNoBytes) {
    TempDir dir;
    EXPECT_FALSE(ElfReader::open(ElfSource::file(dir / "missing")));
    EXPECT_FALSE(ElfReader::open(ElfSource::file(dir.path()))) << "a directory";
    // A FIFO is not waited on: no writer will come.
    ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
    EXPECT_FALSE(ElfReader::open(ElfSource::file(dir / "fifo")));
    EXPECT_EQ(ElfSource::file(dir / "fifo").size(), 0u);
}

TEST(ElfNotes, WalksNotesAlignedToFourOrEight) {
    const ElfBuilder elf(true, true);
    const std::string four = elf.note("GNU", 1, kAbiTag) + elf.note("GNU", NT_GNU_BUILD_ID, kId);
    ElfNotes walk(four, 4, true);
    const auto first = walk.next();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->type, 1u);
    EXPECT_EQ(first->name, std::string_view("GNU\0", 4));
    EXPECT_EQ(first->desc, kAbiTag);
    const auto second = walk.next();
    ASSERT_TRUE(second);
    EXPECT_EQ(second->desc, kId);
    EXPECT_FALSE(walk.next());

    // In a segment aligned to 8 (GNU property notes) each note is padded to 8 bytes; the
    // descriptor after "GNU\0" starts 16 bytes in either way. A 4-byte walk misses the second.
    std::string eight;
    for (const auto& [type, desc] : {std::pair<std::uint32_t, std::string>{5, "prop"},
                                     std::pair<std::uint32_t, std::string>{NT_GNU_BUILD_ID, kId}}) {
        std::string note(12, '\0');
        put_le(note, 0, 4, 4);
        put_le(note, 4, desc.size(), 4);
        put_le(note, 8, type, 4);
        note += std::string("GNU\0", 4) + desc;
        note.resize((note.size() + 7) / 8 * 8, '\0');
        eight += note;
    }
    ElfNotes properties(eight, 8, true);
    const auto property = properties.next();
    ASSERT_TRUE(property);
    EXPECT_EQ(property->desc, "prop");
    EXPECT_EQ(build_id_in_notes(eight, 8, true), kIdHex);
    EXPECT_EQ(build_id_in_notes(eight, 4, true), "");
}

TEST(ElfNotes, OnlyGnusBuildIdOfOneTo64BytesCounts) {
    const ElfBuilder elf(true, true);
    EXPECT_EQ(build_id_in_notes(elf.note("GNU", NT_GNU_BUILD_ID, kId), 4, true), kIdHex);
    EXPECT_EQ(build_id_in_notes(elf.note("XYZ", NT_GNU_BUILD_ID, kId), 4, true), "");
    EXPECT_EQ(build_id_in_notes(elf.note("GNU", 1, kId), 4, true), "");
    EXPECT_EQ(build_id_in_notes(elf.note("GNU", NT_GNU_BUILD_ID, ""), 4, true), "");
    EXPECT_EQ(build_id_in_notes(elf.note("GNU", NT_GNU_BUILD_ID, std::string(65, 'x')), 4, true),
              "");
    std::string longest;
    for (int i = 0; i < 64; ++i)
        longest += "ab";
    EXPECT_EQ(build_id_in_notes(elf.note("GNU", NT_GNU_BUILD_ID, std::string(64, '\xab')), 4, true),
              longest);
    // The id after a note that does not fit is not reached.
    std::string cut = elf.note("GNU", 1, kAbiTag);
    put_le(cut, 4, 1000, 4);
    EXPECT_EQ(build_id_in_notes(cut + elf.note("GNU", NT_GNU_BUILD_ID, kId), 4, true), "");
}

TEST(ElfString, ReadsOnlyTerminatedStringsWithinTheTable) {
    using kiln::detail::elf_string;
    const std::string_view table("\0first\0second\0tail", 18);
    EXPECT_EQ(elf_string(table, 0), std::string_view(""));
    EXPECT_EQ(elf_string(table, 1), std::string_view("first"));
    EXPECT_EQ(elf_string(table, 7), std::string_view("second"));
    EXPECT_EQ(elf_string(table, 9), std::string_view("cond"));
    EXPECT_FALSE(elf_string(table, 14)) << "not terminated";
    EXPECT_FALSE(elf_string(table, 18));
    EXPECT_FALSE(elf_string(table, ~std::uint64_t{0}));
}
