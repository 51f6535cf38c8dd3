#pragma once
/// @file
/// NVRTC compilation to cubins, through the in-memory and on-disk caches. A Compiler turns a source
/// and CompileOptions into a Program (a cubin and what NVRTC said about it); each distinct request
/// compiles once, and the cache key covers everything that can change the cubin. The front ends
/// all compile through Compiler::global(); docs/cli.md ("Compiling without a GPU") and
/// docs/cache.md show it in use.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/recipe.hpp"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

namespace cache {
class Store;
}

/// A header handed to NVRTC in memory: `#include "name"` in the source finds it. It is on no
/// disk: a `-lineinfo` cubin's line table and NVRTC's errors name it `/kiln-in-memory/<name>`,
/// the same from any working directory (an absolute name stays as it is).
struct Header {
    /// The name the source includes it by, e.g. `"my_types.cuh"`.
    std::string name;
    /// Its content, which is part of the cache key.
    std::string source;
};

/// Device code linked into a program compiled as relocatable device code (`-dc` or
/// `-rdc=true`): a static library (`.a`), a cubin, a fatbin, LTO-IR, PTX or a host object that
/// carries device code. Its bytes are part of the cache key and are kept in the cache entry; its
/// name only labels it in messages and listings.
///
///     CompileOptions options{"-dc"};
///     options.link_inputs.push_back(LinkInput::from_file("libmydevice.a"));
struct LinkInput {
    /// Read the file at @p path; its kind is found from its first bytes.
    /// @param path the file.
    /// @return the input, named after the file.
    /// @throws ArgumentError when it cannot be read or is not device code.
    static LinkInput from_file(const std::filesystem::path& path);
    /// @p bytes named @p name; the kind is found from the first bytes.
    /// @param name a label for messages, e.g. "helpers.ltoir".
    /// @param bytes the input itself.
    /// @return the input.
    /// @throws ArgumentError for empty bytes or bytes that are not device code.
    static LinkInput from_bytes(std::string name, std::string bytes);

    /// What the linker is given.
    cache::LinkInputKind kind = cache::LinkInputKind::library;
    /// A label, e.g. the file name.
    std::string name;
    /// The input, byte for byte.
    std::string bytes;
};

/// What to compile for. Defaults: an explicit -arch, -lineinfo, -std=c++17.
/// A braced list of strings is a list of NVRTC options: `RawKernel(src, "k", {"-DN=4"})`.
struct CompileOptions {
    /// Kiln's defaults, for the current device.
    CompileOptions() = default;
    /// The defaults plus @p nvrtc_options.
    /// @param nvrtc_options extra NVRTC options, as #options.
    // NOLINTNEXTLINE(google-explicit-constructor): `CompileOptions{"-G"}`
    CompileOptions(std::initializer_list<std::string> nvrtc_options)
        : options(nvrtc_options) {}
    /// Options for the architecture @p target, e.g. "sm_90".
    /// @param target the architecture, as #arch.
    /// @return the defaults with #arch set.
    static CompileOptions for_arch(std::string target) {
        CompileOptions o;
        o.arch = std::move(target);
        return o;
    }

    /// Target, e.g. "sm_90" or "sm_90a" (also accepted: "90", "compute_90"). Empty: the current
    /// device's; without a device it must be given.
    std::string arch;
    /// Extra NVRTC options, passed in order after Kiln's defaults (e.g. "-DN=4",
    /// "--use_fast_math"). A user "-std=..." replaces the default; "-arch" here is an error (use
    /// `arch`).
    std::vector<std::string> options;
    /// C++ names whose lowered (mangled) names are wanted, e.g. "my_kernel<float, 4>".
    std::vector<std::string> name_expressions;
    /// Headers handed to NVRTC in memory; their content is part of the key.
    std::vector<Header> headers;
    /// Make the CUDA toolkit's headers (cuda_fp16.h, cooperative_groups.h, ...) includable, as
    /// CuPy does. The key records this switch, not the directory, so caches still move between
    /// machines; the headers' content is covered by the NVRTC version they ship with.
    bool cuda_headers = true;
    /// -lineinfo; unset means KILN_LINEINFO (default on).
    std::optional<bool> lineinfo;
    /// Device code linked into the program after NVRTC, in order, with the toolkit's device
    /// runtime (libcudadevrt.a). Needs relocatable device code (`-dc` or `-rdc=true` in
    /// #options), which is always linked, also without link inputs, so that kernels may launch
    /// kernels. The bytes are part of the key.
    std::vector<LinkInput> link_inputs;
    /// false: skip the disk cache for this compile (memory de-duplication still applies).
    bool use_disk_cache = true;
    /// The front end's description of the kernel (JSON text: for a generated kernel its spec,
    /// dtypes, dimensions and layout), kept in the cache entry's recipe. Not part of the key: it
    /// says what produced the source, the source itself is keyed.
    std::string description;
};

/// How a Program reached this process: `compiled` by NVRTC here, or read from the `disk_cache`.
enum class ProgramOrigin { compiled, disk_cache };

/// Where a compile's time went, in milliseconds (all zero for a program read from the disk cache,
/// except `lookup_ms` and `wait_ms`). For benchmarks and diagnostics: the parts Kiln adds to NVRTC
/// are the lookup and the store.
struct CompilePhases {
    /// Looking the key up in the disk cache (a miss, for a compiled program), waits included.
    double lookup_ms = 0;
    /// Of lookup_ms, the time spent waiting for another process (or host) compiling the same key
    /// (kiln::cache::Store::load_or_claim); zero when it did not wait.
    double wait_ms = 0;
    /// NVRTC: creating, compiling and reading back the program (and linking, for -dc).
    double nvrtc_ms = 0;
    /// Writing the entry (and the saved source) to the disk cache.
    double store_ms = 0;
};

/// A compiled program: an immutable cubin plus what NVRTC said about it. Shared by every kernel
/// and module built from the same source, options and architecture.
class Program {
  public:
    /// The cache key it was compiled under.
    /// @return the cache key it was compiled under.
    const cache::Key& key() const noexcept { return m_key; }
    /// The cubin.
    /// @return the cubin, byte for byte.
    const std::string& cubin() const noexcept { return m_cubin; }
    /// NVRTC's log.
    /// @return NVRTC's log (warnings; empty when there were none).
    const std::string& log() const noexcept { return m_log; }
    /// The target architecture.
    /// @return the target architecture, e.g. "sm_90".
    const std::string& arch() const noexcept { return m_arch; }
    /// The CUDA source it was compiled from.
    /// @return the CUDA source it was compiled from; empty for a generated kernel found on disk
    /// through its memo (Compiler::compile(const GeneratedKernel&, ...)), whose source was not
    /// generated.
    const std::string& source() const noexcept { return m_source; }
    /// Whether it was compiled here or read from the disk cache.
    /// @return whether it was compiled here or read from the disk cache.
    ProgramOrigin origin() const noexcept { return m_origin; }
    /// Time to compile, or to load from disk, in milliseconds.
    /// @return the time in milliseconds.
    double milliseconds() const noexcept { return m_ms; }
    /// The options NVRTC was given, Kiln's defaults included.
    /// @return the options, in order.
    const std::vector<std::string>& options() const noexcept { return m_options; }
    /// The options exactly as NVRTC was given them: options() and those that do not change the
    /// cubin, so are not in the key (the toolkit's include directories, `--no-cache`). Empty for a
    /// program read from the disk cache.
    /// @return the options, in order.
    const std::vector<std::string>& nvrtc_options() const noexcept { return m_nvrtc_options; }
    /// Where the time of this compile (or disk read) went.
    /// @return the phases, in milliseconds.
    const CompilePhases& phases() const noexcept { return m_phases; }
    /// The name expressions and their lowered names.
    /// @return each name expression given at compile time with its lowered (mangled) name.
    const std::vector<std::pair<std::string, std::string>>& lowered_names() const noexcept {
        return m_lowered_names;
    }
    /// The lowered name of a name expression given at compile time; nullopt when not one.
    /// @param name_expression the expression, spelled as it was given.
    /// @return the lowered name, or nullopt.
    std::optional<std::string> lowered_name(std::string_view name_expression) const;
    /// The saved `.cu` beside the cache entry (KILN_CACHE_SAVE_SOURCE=1), if any.
    /// @return the path, or nullopt.
    const std::optional<std::filesystem::path>& source_path() const noexcept {
        return m_source_path;
    }

  private:
    friend class Compiler;
    cache::Key m_key;
    std::string m_cubin, m_log, m_arch, m_source;
    std::vector<std::string> m_options, m_nvrtc_options;
    std::vector<std::pair<std::string, std::string>> m_lowered_names;
    ProgramOrigin m_origin = ProgramOrigin::compiled;
    double m_ms = 0;
    CompilePhases m_phases;
    std::optional<std::filesystem::path> m_source_path;
};

/// What a Compiler has done since it was made: plain counters, read as one snapshot. For
/// Compiler::global(), what this process did (every front end compiles through it), so a test or a
/// service can check that each kernel was compiled once.
struct CompileStatistics {
    /// NVRTC compiles run, failed ones included.
    std::uint64_t compiles = 0;
    /// Programs read from the disk cache instead of compiled.
    std::uint64_t disk_hits = 0;
    /// Requests answered from memory, including those that waited for another thread's compile
    /// of the same program.
    std::uint64_t memory_hits = 0;
    /// Generated kernels found through their memo (kiln/cache/memo_store.hpp) without generating
    /// their source; also counted in disk_hits or memory_hits.
    std::uint64_t memo_hits = 0;
};

/// A kernel whose source a front end generates, as Compiler::compile() looks it up: by a
/// signature that stands for its source, so a fresh process can find its cubin without
/// generating the source. The on-disk memo of the signature (kiln/cache/memo_store.hpp) holds the
/// entry key, kernel name and cubin that the source led to last time.
struct GeneratedKernel {
    /// A hash of everything that decides the source (the front end, its definition, the plan,
    /// the architecture, Kiln's and NVRTC's builds); none: no memo, the source is generated.
    std::optional<cache::Key> signature;
    /// The kernel the program must hold: a memo whose cubin lacks it is not used.
    std::string kernel;
    /// The architecture the signature was made for.
    std::string arch;
};

/// What Compiler::compile() gave for a GeneratedKernel.
struct GeneratedProgram {
    /// The program.
    std::shared_ptr<const Program> program;
    /// Whether it came through the memo (its source was not generated; Program::source() is
    /// empty, and a driver that rejects its cubin needs the caller's full compile).
    bool from_memo = false;
};

/// Compiles CUDA source with NVRTC. Each distinct (source, options, headers, name expressions,
/// architecture, NVRTC version) compiles once per Compiler, also when threads ask at once; results
/// go to and come from the disk cache. Thread-safe.
class Compiler {
  public:
    /// Use @p store for the disk cache (nullptr: memory only). The store must outlive the Compiler.
    /// @param store the disk cache, or nullptr.
    explicit Compiler(cache::Store* store);
    /// Frees the programs it holds that nothing else shares.
    ~Compiler();
    /// Not copyable: a compiler holds its programs and in-flight compiles.
    Compiler(const Compiler&) = delete;
    /// Not copyable.
    Compiler& operator=(const Compiler&) = delete;

    /// The process-wide compiler over cache::Store::global().
    /// @return the compiler, alive until the end of the program.
    /// @throws ConfigError (on first use) when a KILN_CACHE_* variable does not parse.
    static Compiler& global();

    /// Compile, or find the program in memory or on disk.
    /// @param source the CUDA source.
    /// @param options the architecture, NVRTC options, headers and name expressions.
    /// @return the program, shared with every other request for the same key.
    /// @throws CompileError (NVRTC rejected the source or an option), NoDeviceError (no arch given
    /// and no device), ArgumentError (bad options).
    std::shared_ptr<const Program> compile(std::string_view source, const CompileOptions& options);

    /// The program of a generated kernel, in order: through its memo (nothing generated, one file
    /// read), then the caller's @p full compile (which generates the source and calls compile(),
    /// the memory and disk caches first), whose program the memo then remembers. The memo is
    /// used only with a disk cache that reads, and not when the source is wanted (source saving,
    /// compile-time traces).
    /// @param kernel the signature, kernel name and architecture.
    /// @param full generates the source and compiles it; called only when the memo does not
    /// answer.
    /// @param rejected a program the memo gave that the driver rejected: it is dropped from
    /// memory, the memo is not read, and what @p full makes replaces the memo.
    /// @return the program, and whether the memo gave it.
    /// @throws what @p full throws.
    GeneratedProgram compile(const GeneratedKernel& kernel,
                             const std::function<std::shared_ptr<const Program>()>& full,
                             const Program* rejected = nullptr);

    /// The key compile() would use, without compiling. Same exceptions as compile().
    /// @param source the CUDA source.
    /// @param options the options, as for compile().
    /// @return the key.
    cache::Key key_for(std::string_view source, const CompileOptions& options);

    /// The driver rejected @p program's cubin: forget it in memory, remove it from disk, and
    /// compile it afresh (bypassing the disk cache).
    /// @param program the rejected program.
    /// @param options the options it was compiled with.
    /// @return the new program.
    /// @throws as compile().
    std::shared_ptr<const Program> recompile(const Program& program, const CompileOptions& options);

    /// Compile @p recipe for @p arch as the recorded compile ran: under the recipe's NVRTC program
    /// name (which a `-lineinfo` cubin embeds), reading and writing no cache, not even this
    /// Compiler's memory. Kiln's default options are this Kiln's, as for compile(), so the
    /// program's key is the key compile() would use for options_from_recipe(recipe, arch). For
    /// checking that an entry's cubin is what its recipe produces (`kiln import --verify`).
    /// Counts as a compile in statistics(). The recipe may come from anyone: one whose source or
    /// headers include anything but its own headers and the toolkit's, or whose options add an
    /// include folder, is refused before NVRTC runs (ArgumentError). Same exceptions as compile().
    /// @param recipe what an entry recorded.
    /// @param arch the target architecture.
    /// @param link_inputs the entry's link inputs (Entry::link_inputs), for relocatable device
    /// code; see link_inputs_from_entry().
    /// @return the program, compiled afresh.
    std::shared_ptr<const Program> reproduce(const cache::Recipe& recipe, std::string_view arch,
                                             const std::vector<cache::LinkInput>& link_inputs = {});

    /// Drop every program this compiler holds in memory (those in use elsewhere stay alive with
    /// their users): the next compile() of each reads it from disk or compiles it again, as in a
    /// fresh process. Compiles in progress finish and are not dropped.
    void clear_memory();

    /// The disk cache in use.
    /// @return the disk cache in use, or nullptr for memory only.
    cache::Store* store() const noexcept;

    /// The counters so far. Cheap (relaxed atomic loads); concurrent compiles may land between
    /// the loads of two fields.
    /// @return a snapshot of the counters.
    CompileStatistics statistics() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Compiler::global().compile(source, options).
/// @param source the CUDA source.
/// @param options the options; the defaults compile for the current device.
/// @return the program.
/// @throws as Compiler::compile().
std::shared_ptr<const Program> compile(std::string_view source, const CompileOptions& options = {});

/// Options that compile `recipe.source` again for @p arch as the recorded compile did: the
/// caller's NVRTC options, headers, name expressions, toolkit-header switch and description, and
/// `-lineinfo` as it was resolved then (explicitly, whatever KILN_LINEINFO says now). Compiling
/// the recipe's source with them on the same NVRTC asks for the key the application itself asks
/// for on @p arch: `kiln warm --from-cache` relies on it. The program name is not an option; see
/// Compiler::reproduce().
///
///     auto entry = store.local().peek(key);  // an entry with a recipe
///     compile(entry->recipe->source, options_from_recipe(*entry->recipe, "sm_80"));
/// @param recipe what an entry recorded.
/// @param arch the target architecture.
/// @return the options.
CompileOptions options_from_recipe(const cache::Recipe& recipe, std::string arch);

/// The link inputs an entry recorded (Entry::link_inputs), as CompileOptions::link_inputs takes
/// them: those held by their bytes, in order; the toolkit's device runtime, recorded by its content
/// hash, is left out (every relocatable compile links it).
/// @param recorded the entry's link inputs.
/// @return the inputs to link.
/// @throws ArgumentError for an input recorded by key that is not the device runtime.
std::vector<LinkInput> link_inputs_from_entry(const std::vector<cache::LinkInput>& recorded);

/// options_from_recipe() for @p entry's recipe, with the link inputs it recorded: what
/// `kiln warm --from-cache` compiles an entry again with.
/// @param entry an entry that holds a recipe.
/// @param arch the target architecture.
/// @return the options.
/// @throws ArgumentError when the entry holds no recipe, as link_inputs_from_entry().
CompileOptions options_from_entry(const cache::Entry& entry, std::string arch);

/// Normalize an architecture name to "sm_XY[a|f]".
/// @param arch "sm_90", "90", "compute_90", "sm_90a" and the like.
/// @return the name as "sm_90" or "sm_90a".
/// @throws ArgumentError for anything else.
std::string normalize_arch(std::string_view arch);

/// The NVRTC build in use, for people: "13.0 (build 65be0db3)", major.minor and the first 8 hex
/// digits of the library's ELF build id (`readelf -n libnvrtc.so` shows it whole), which tells
/// patch releases apart. Cache entries record this string. It is cheap: the build id is read from
/// the first page of the library once per process; cache keys use the full build id. For a library
/// without a build id it is the version found in the library ("13.0.88"), else major.minor and a
/// hash of the library's path, size and modification time.
/// @return the version string, computed once per process.
const std::string& nvrtc_version();

} // namespace kiln
