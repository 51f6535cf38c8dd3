#pragma once
// Which NVRTC build compiles. nvrtcVersion() gives only major.minor, so patch releases would share
// cache keys; the library's ELF build id (NT_GNU_BUILD_ID) tells every build apart. It is read from
// the note segment the loader mapped (no file system access on a process's first kernel), else from
// the first page of the file, instead of scanning the ~100 MB library for its version banner.

#include <cstddef>
#include <filesystem>
#include <string>

namespace kiln::detail {

/// The identity of the loaded NVRTC that goes into cache keys, computed once per process:
/// "13.0+build.<hex build id>"; for a library without a build id the version from its banner
/// ("13.0.88", a scan of the whole file), else "13.0+<hash of path, size and mtime>". Never
/// written to disk.
const std::string& nvrtc_full_version();

/// The same build for people (kiln::nvrtc_version()): "13.0 (build 65be0db3)", the build id
/// shortened to 8 hex digits; for a library without a build id, nvrtc_full_version().
const std::string& nvrtc_display_version();

/// The GNU build id of the ELF file @p path as lowercase hex; empty when the file cannot be read,
/// is not ELF, is damaged or has no NT_GNU_BUILD_ID note. Reads only the ELF header, the program
/// headers and the notes they point to (else the section headers and note sections), with pread
/// (base's ElfReader over a file source).
std::string elf_build_id(const std::filesystem::path& path);

/// The GNU build id of the loaded object (executable or shared library) whose segments hold
/// @p address, read from its note segments in memory, as lowercase hex; empty when no loaded object
/// holds the address or it has no build id note. Opens no file: the notes are read in place.
std::string loaded_build_id(const void* address);

/// What identifies this program for the cache's read-ahead list (Store::read_ahead): the main
/// executable's build id ("build-id:<hex>", the same on every machine that runs the same build),
/// else its resolved path, size and modification time. Computed once; empty when none is known.
const std::string& program_identity();

/// Find "release X.Y, VX.Y.Z" in a buffer; empty if absent. Exposed for tests.
std::string find_version_banner(const char* data, std::size_t size);

} // namespace kiln::detail
