#include "kiln/compiler.hpp"

#include "compile_trace.hpp"
#include "cuda_include.hpp"
#include "device_linker.hpp"
#include "driver/driver_trace.hpp"
#include "driver/prepare_steps.hpp"
#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "kiln/nvtx.hpp"
#include "kiln/settings.hpp"
#include "log_line.hpp"
#include "lookup_log.hpp"
#include "nvrtc_identity.hpp"
#include "prepare_compiling.hpp"
#include "recipe_sandbox.hpp"

#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <iterator>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace kiln {

namespace {

// compile/'s start-up work joins kiln::prepare() wherever a program compiles or loads kernels.
const bool kPrepareStepAdded = (detail::add_prepare_step(&detail::prepare_compiling), true);

// The name under which entries record the toolkit's device runtime.
constexpr const char* kDeviceRuntimeName = "libcudadevrt.a";

// Bumped whenever the meaning of a key's fields changes, so old entries simply miss. 2: headers
// are named under kHeaderDir in the line table (their cubins no longer name the working directory).
constexpr std::uint64_t kKeySchema = 2;

// NVRTC places an in-memory header at <working directory>/<name>, and a -lineinfo cubin's line
// table names it there: the same program compiled from another directory would be other bytes,
// and `kiln import --verify` would refuse it. So each header with a relative name is handed over
// behind a #line naming it under this directory, which exists nowhere: the line table, NVRTC's
// errors and __FILE__ say "/kiln-in-memory/kiln/block_reduce.cuh" from any directory. The #line
// renames only: NVRTC still finds the header by the name an #include spells, and still looks for
// its quoted includes beside <working directory>/<name> (recipe_sandbox.cpp checks there).
constexpr std::string_view kHeaderDir = "/kiln-in-memory/";

[[noreturn]] void throw_nvrtc(nvrtcResult result, const char* call) {
    throw Error(std::string("NVRTC call failed: ") + call + " returned " +
                nvrtcGetErrorString(result));
}

#define KILN_NVRTC(call)                                                                           \
    do {                                                                                           \
        const nvrtcResult kiln_nvrtc_result_ = (call);                                             \
        if (kiln_nvrtc_result_ != NVRTC_SUCCESS) throw_nvrtc(kiln_nvrtc_result_, #call);           \
    } while (0)

struct ProgramDeleter {
    void operator()(nvrtcProgram program) const noexcept { nvrtcDestroyProgram(&program); }
};
using ProgramHandle = std::unique_ptr<_nvrtcProgram, ProgramDeleter>;

bool starts_with(std::string_view text, std::string_view prefix) {
    return text.substr(0, prefix.size()) == prefix;
}

bool is_arch_option(std::string_view option) {
    return starts_with(option, "-arch") || starts_with(option, "--gpu-architecture") ||
           starts_with(option, "--gpu_architecture");
}

// Everything that decides the cubin, resolved once per compile() call.
struct Request {
    std::string source;
    std::string arch;
    std::vector<std::string> options; // final NVRTC options, defaults first
    std::vector<Header> headers;      // sorted by name
    std::vector<std::string> name_expressions;
    bool cuda_headers = false;
    cache::Key key;
    // For the entry's recipe: where the caller's options start in `options`, -lineinfo as
    // resolved, and the front end's description (not in the key).
    std::size_t first_user_option = 0;
    bool lineinfo = true;
    std::string description;
    // Relocatable device code: linked after NVRTC with these inputs and the device runtime.
    detail::RelocatableMode mode;
    std::vector<LinkInput> link_inputs;
};

Request resolve_request(std::string_view source, const CompileOptions& in,
                        const std::string& nvrtc) {
    Request r;
    r.source = std::string(source);
    r.arch = normalize_arch(in.arch.empty() ? Device::current().arch() : in.arch);
    const bool lineinfo = in.lineinfo.value_or(settings::flag(Variable::lineinfo));
    const bool user_std = std::any_of(in.options.begin(), in.options.end(), [](const auto& o) {
        return starts_with(o, "-std") || starts_with(o, "--std");
    });
    r.options.push_back("-arch=" + r.arch);
    if (lineinfo) r.options.emplace_back("-lineinfo");
    if (!user_std) r.options.emplace_back("-std=c++17");
    r.first_user_option = r.options.size();
    r.lineinfo = lineinfo;
    r.description = in.description;
    for (const auto& option : in.options) {
        if (is_arch_option(option))
            throw ArgumentError("option '" + option +
                                "': give the architecture as CompileOptions::arch (CLI: --arch), "
                                "not as an NVRTC option");
        if (option.empty()) throw ArgumentError("an empty NVRTC option was given");
        r.options.push_back(option);
    }
    r.headers = in.headers;
    std::sort(r.headers.begin(), r.headers.end(),
              [](const Header& a, const Header& b) { return a.name < b.name; });
    for (std::size_t i = 1; i < r.headers.size(); ++i)
        if (r.headers[i].name == r.headers[i - 1].name)
            throw ArgumentError("header '" + r.headers[i].name + "' was given twice");
    r.cuda_headers = in.cuda_headers;
    r.mode = detail::relocatable_mode(r.options);
    if (!in.link_inputs.empty() && !r.mode.relocatable)
        throw ArgumentError("link inputs are linked into relocatable device code only: add \"-dc\" "
                            "(or \"-rdc=true\") to the NVRTC options");
    for (const auto& input : in.link_inputs)
        if (input.bytes.empty())
            throw ArgumentError("link input '" + input.name +
                                "' is empty: make it with LinkInput::from_file() or from_bytes()");
    r.link_inputs = in.link_inputs;
    r.name_expressions = in.name_expressions;
    std::sort(r.name_expressions.begin(), r.name_expressions.end());
    r.name_expressions.erase(std::unique(r.name_expressions.begin(), r.name_expressions.end()),
                             r.name_expressions.end());

    // The key holds what decides the cubin only: no paths, no times, no program name.
    cache::KeyBuilder key;
    key.add("schema", kKeySchema);
    key.add("entry-format", std::uint64_t{cache::kEntryFormatVersion});
    key.add("nvrtc", nvrtc);
    key.add("arch", r.arch);
    key.add("output", "cubin");
    key.add("options", std::uint64_t{r.options.size()});
    for (const auto& option : r.options)
        key.add("option", option);
    key.add("source", r.source);
    key.add("headers", std::uint64_t{r.headers.size()});
    for (const auto& header : r.headers)
        key.add("header-name", header.name).add("header", header.source);
    key.add("cuda-headers", std::uint64_t{r.cuda_headers});
    key.add("name-expressions", std::uint64_t{r.name_expressions.size()});
    for (const auto& name : r.name_expressions)
        key.add("name-expression", name);
    // Only relocatable programs have these fields, so every other key stays as it was.
    if (r.mode.relocatable) {
        key.add("link", r.mode.lto ? "nvjitlink-lto" : "nvjitlink");
        key.add("nvjitlink", detail::nvjitlink_full_version());
        key.add("device-runtime", detail::device_runtime().content.hex());
        key.add("link-inputs", std::uint64_t{r.link_inputs.size()});
        for (const auto& input : r.link_inputs)
            key.add("link-input-kind", std::uint64_t{static_cast<std::uint32_t>(input.kind)})
                .add("link-input", input.bytes);
    }
    r.key = key.finish();
    return r;
}

// What the entry records about how @p r was compiled, under the NVRTC program name @p name:
// options_from_recipe() turns it back into options that resolve_request() makes the same key from.
cache::Recipe recipe_of(const Request& r, const std::string& name) {
    cache::Recipe recipe;
    recipe.source = r.source;
    recipe.options.assign(r.options.begin() + static_cast<std::ptrdiff_t>(r.first_user_option),
                          r.options.end());
    recipe.headers.reserve(r.headers.size());
    for (const auto& header : r.headers)
        recipe.headers.emplace_back(header.name, header.source);
    recipe.name_expressions = r.name_expressions;
    recipe.cuda_headers = r.cuda_headers;
    recipe.lineinfo = r.lineinfo;
    recipe.program_name = name;
    recipe.description = r.description;
    return recipe;
}

struct NvrtcOutput {
    std::string cubin, log;
    std::vector<std::pair<std::string, std::string>> lowered_names;
    std::vector<std::string> options; // as given to NVRTC
};

// NVRTC 12.9 and later keep their own cache of PTX and cubins in the driver's compute cache
// (CUDA_CACHE_PATH). Kiln caches the cubin itself, so NVRTC's would only cost each compile a key
// computation and a write, and fill the driver's cache with entries that Kiln never asks for.
// KILN_NVRTC_CACHE=1 leaves it on (benchmarks compare both states).
bool turn_nvrtc_cache_off() {
    static const bool off = [] {
        int major = 0, minor = 0;
        const bool has = nvrtcVersion(&major, &minor) == NVRTC_SUCCESS &&
                         (major > 12 || (major == 12 && minor >= 9));
        return has && !settings::flag(Variable::nvrtc_cache);
    }();
    return off;
}

bool is_no_cache_option(std::string_view option) {
    return option == "--no-cache" || option == "-no-cache";
}

// Relocatable device code: NVRTC's relocatable cubin (or LTO-IR) linked into an executable cubin.
std::string link_program(const Request& r, const std::string& program_name, NvrtcOutput& out) {
    detail::LinkRequest request;
    request.arch = r.arch;
    request.lto = r.mode.lto;
    request.lineinfo = r.lineinfo;
    request.inputs = &r.link_inputs;
    request.nvrtc_options = r.options;
    request.source = r.source;
    return detail::link_device_code(out.cubin, program_name, request, out.log);
}

// What an entry records of a link: the caller's inputs with their bytes, then the device runtime
// by its content hash (it is found again from the toolkit, not stored in every entry).
std::vector<cache::LinkInput> recorded_link_inputs(const Request& r) {
    std::vector<cache::LinkInput> recorded;
    if (!r.mode.relocatable) return recorded;
    for (const auto& input : r.link_inputs)
        recorded.push_back({input.kind, input.name, input.bytes, std::nullopt});
    recorded.push_back({cache::LinkInputKind::library, kDeviceRuntimeName, std::string(),
                        detail::device_runtime().content});
    return recorded;
}

// What an entry of @p r would record of its inputs, for explaining a miss (lookup_log.hpp).
cache::Entry wanted_entry(const Request& r) {
    cache::Entry entry;
    entry.recipe = recipe_of(r, std::string());
    entry.link_inputs = recorded_link_inputs(r);
    return entry;
}

// The text NVRTC gets for @p header: its source behind a #line that names it under kHeaderDir.
// An absolute name is already the same from any directory, and a name that a #line could not
// spell plainly (a quote, a backslash, a control character) is handed over as it is.
std::string header_for_nvrtc(const Header& header) {
    const bool plain = std::all_of(header.name.begin(), header.name.end(), [](char c) {
        return c >= ' ' && c <= '~' && c != '"' && c != '\\';
    });
    if (header.name.empty() || header.name.front() == '/' || !plain) return header.source;
    std::string text;
    text.reserve(kHeaderDir.size() + header.name.size() + header.source.size() + 12);
    text.append("#line 1 \"").append(kHeaderDir).append(header.name).append("\"\n");
    return text.append(header.source);
}

NvrtcOutput run_nvrtc(const Request& r, const std::string& program_name,
                      const std::string& time_trace_option = {}) {
    std::vector<std::string> header_texts;
    for (const auto& h : r.headers)
        header_texts.push_back(header_for_nvrtc(h));
    std::vector<const char*> header_sources, header_names;
    for (std::size_t i = 0; i < r.headers.size(); ++i) {
        header_sources.push_back(header_texts[i].c_str());
        header_names.push_back(r.headers[i].name.c_str());
    }
    nvrtcProgram raw = nullptr;
    KILN_NVRTC(nvrtcCreateProgram(&raw, r.source.c_str(), program_name.c_str(),
                                  static_cast<int>(r.headers.size()), header_sources.data(),
                                  header_names.data()));
    ProgramHandle program(raw);
    for (const auto& name : r.name_expressions)
        KILN_NVRTC(nvrtcAddNameExpression(raw, name.c_str()));

    std::vector<const char*> options;
    for (const auto& option : r.options)
        options.push_back(option.c_str());
    // Not in the key: where the trace goes changes nothing in the cubin.
    if (!time_trace_option.empty()) options.push_back(time_trace_option.c_str());
    if (r.cuda_headers)
        for (const auto& include : detail::cuda_include_options())
            options.push_back(include.c_str());
    // Not in the key either: NVRTC's own cache changes nothing in the cubin.
    if (turn_nvrtc_cache_off() && std::none_of(r.options.begin(), r.options.end(),
                                               [](const auto& o) { return is_no_cache_option(o); }))
        options.push_back("--no-cache");
    const nvrtcResult result =
        nvrtcCompileProgram(raw, static_cast<int>(options.size()), options.data());

    NvrtcOutput out;
    out.options.assign(options.begin(), options.end());
    std::size_t log_size = 0;
    if (nvrtcGetProgramLogSize(raw, &log_size) == NVRTC_SUCCESS && log_size > 1) {
        out.log.resize(log_size);
        nvrtcGetProgramLog(raw, out.log.data());
        out.log.resize(log_size - 1); // drop the terminating NUL
    }
    if (result != NVRTC_SUCCESS) {
        // The first line says what went wrong: NVRTC's first error, with its file and line.
        const std::string first = first_compile_error(out.log);
        std::string summary;
        if (result == NVRTC_ERROR_INVALID_OPTION)
            summary = first.empty() ? "NVRTC rejected an option (see the log for which)"
                                    : "NVRTC rejected an option: " + first;
        else if (first.empty())
            summary = std::string("NVRTC could not compile ") + program_name + " (" +
                      nvrtcGetErrorString(result) + ")";
        else
            summary = "NVRTC could not compile the program: " + first;
        if (settings::flag(Variable::dump_source_on_error))
            kiln::detail::log_error("{}\n{}\n{}", summary, out.log, number_lines(r.source));
        throw CompileError(summary, out.log, r.options, r.source);
    }
    std::size_t cubin_size = 0;
    if (r.mode.lto) {
        KILN_NVRTC(nvrtcGetLTOIRSize(raw, &cubin_size));
        out.cubin.resize(cubin_size);
        KILN_NVRTC(nvrtcGetLTOIR(raw, out.cubin.data()));
    } else {
        KILN_NVRTC(nvrtcGetCUBINSize(raw, &cubin_size));
        out.cubin.resize(cubin_size);
        KILN_NVRTC(nvrtcGetCUBIN(raw, out.cubin.data()));
    }
    for (const auto& name : r.name_expressions) {
        const char* lowered = nullptr;
        KILN_NVRTC(nvrtcGetLoweredName(raw, name.c_str(), &lowered));
        out.lowered_names.emplace_back(name, lowered);
    }
    if (r.mode.relocatable) out.cubin = link_program(r, program_name, out);
    return out;
}

// Bytes the link inputs take in an entry's metadata (the grammar in cache/entry.cpp).
std::uint64_t encoded_size(const std::vector<cache::LinkInput>& inputs) {
    std::uint64_t size = 4;
    for (const auto& input : inputs)
        size += 16 + input.name.size() + input.bytes.size() + 16;
    return size;
}

// Bytes the recipe takes in an entry's metadata (the grammar in cache/entry.cpp).
std::uint64_t encoded_size(const cache::Recipe& recipe) {
    std::uint64_t size = 4 + std::uint64_t{3} * 4 + recipe.source.size() +
                         recipe.program_name.size() + recipe.description.size() +
                         std::uint64_t{3} * 4;
    for (const auto& option : recipe.options)
        size += 4 + option.size();
    for (const auto& [name, content] : recipe.headers)
        size += 8 + name.size() + content.size();
    for (const auto& expression : recipe.name_expressions)
        size += 4 + expression.size();
    return size;
}

double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
}

} // namespace

std::optional<std::string> Program::lowered_name(std::string_view name_expression) const {
    for (const auto& [name, lowered] : m_lowered_names)
        if (name == name_expression) return lowered;
    return std::nullopt;
}

struct Compiler::Impl {
    // A program of this process, produced or being produced: a thread that asks for its key
    // meanwhile waits for it (`produced`, under `mutex`). Not a std::promise: its first
    // set_value costs a fresh process's first call microseconds (call_once, thread-local state).
    struct Slot {
        std::shared_ptr<const Program> program;
        std::exception_ptr error;
        bool ready = false;
    };

    cache::Store* store = nullptr;
    std::mutex mutex;
    std::condition_variable produced;
    std::size_t waiting = 0; // threads in wait_for (under `mutex`): no wake-up without one
    std::unordered_map<cache::Key, std::shared_ptr<Slot>, cache::KeyHash> programs;
    std::atomic<std::uint64_t> compiles{0}, disk_hits{0}, memory_hits{0}, memo_hits{0};

    // Buckets for the first programs now, so a process's first compile or lookup does not
    // also make the table's first rehash (and bind libstdc++'s code for it) on its way.
    Impl() { programs.reserve(64); }

    bool disk_usable() const { return store && !store->config().disabled; }
    bool memo_usable() const;
    // A program made of a memo's cubin (or this process's program of its entry key); nullptr
    // when the cubin lacks the memo's kernel or that program's compile failed.
    std::shared_ptr<const Program> from_memo(cache::Memo memo, const std::string& arch,
                                             double read_ms);

    // What identifies the NVRTC build in keys; computed once per process, from its ELF build id.
    static const std::string& nvrtc() { return detail::nvrtc_full_version(); }

    // How a compile uses the disk cache: both ways, not at all, or only to write (a recompile of
    // an entry the driver rejected replaces it).
    enum class DiskUse { read_write, none, write_only };

    std::shared_ptr<const Program> produce(const Request& r, DiskUse use) {
        const auto start = std::chrono::steady_clock::now();
        auto program = std::make_shared<Program>();
        program->m_key = r.key;
        program->m_arch = r.arch;
        program->m_source = r.source;
        program->m_options = r.options;
        // A traced compile must really compile, so it bypasses the disk cache both ways.
        const bool time_trace = detail::compile_time_trace_enabled();
        const bool disk = use != DiskUse::none && disk_usable() && !time_trace;
        const bool save_source = disk && store->config().save_source;

        // Held while this process compiles the key, so that others wait for its entry instead
        // of compiling it too; let go once the entry is stored (or the compile failed).
        cache::CompileClaim claim;
        if (disk && use == DiskUse::read_write) {
            nvtx::TimeRange range("cache load " + r.key.hex(), nvtx::kCyan);
            auto found = store->load_or_claim(r.key, cache::EntryParts::for_loading);
            program->m_phases.lookup_ms = ms_since(start);
            program->m_phases.wait_ms =
                std::chrono::duration<double, std::milli>(found.waited).count();
            claim = std::move(found.claim);
            auto& entry = found.entry;
            detail::trace_mark("cache lookup (key, entry read and verified)");
            if (entry) {
                program->m_cubin = std::move(entry->payload);
                program->m_log = std::move(entry->log);
                program->m_lowered_names = std::move(entry->lowered_names);
                program->m_origin = ProgramOrigin::disk_cache;
                disk_hits.fetch_add(1, std::memory_order_relaxed);
                if (save_source)
                    program->m_source_path = store->local().save_source(r.key, r.source);
                program->m_ms = ms_since(start);
                return program;
            }
        }
        // The program name is the path where the source is (or would be) saved, so the cubin's
        // line table names a real file for Nsight Compute. It is not part of the key.
        std::string name = "kiln_" + r.key.hex() + ".cu";
        if (disk_usable()) name = store->local().source_path(r.key).string();
        if (save_source) {
            const auto save_start = std::chrono::steady_clock::now();
            program->m_source_path = store->local().save_source(r.key, r.source);
            program->m_phases.store_ms = ms_since(save_start);
        }

        std::optional<detail::TimeTrace> trace;
        if (time_trace) trace.emplace(r.key);
        NvrtcOutput out;
        {
            nvtx::TimeRange range("compile " + r.key.hex(), nvtx::kOrange);
            compiles.fetch_add(1, std::memory_order_relaxed);
            const auto nvrtc_start = std::chrono::steady_clock::now();
            out = run_nvrtc(r, name, trace ? trace->option() : std::string());
            program->m_phases.nvrtc_ms = ms_since(nvrtc_start);
        }
        program->m_nvrtc_options = std::move(out.options);
        if (trace) trace->publish(disk_usable() ? store : nullptr, name);
        program->m_cubin = std::move(out.cubin);
        program->m_log = std::move(out.log);
        program->m_lowered_names = std::move(out.lowered_names);
        program->m_ms = ms_since(start);
        if (!out.log.empty())
            kiln::detail::log_debug("NVRTC log for {}:\n{}", name, program->m_log);
        if (disk) {
            cache::Entry entry;
            entry.key = r.key;
            entry.kind = cache::PayloadKind::cubin;
            entry.provenance = cache::Provenance::own_compile; // compiled here, now
            entry.payload = program->m_cubin;
            entry.lowered_names = program->m_lowered_names;
            entry.nvrtc_version = detail::nvrtc_display_version();
            entry.arch = r.arch;
            entry.compile_ms = program->m_ms;
            entry.log = program->m_log;
            entry.kernel_names =
                cache::cubin_kernel_names(program->m_cubin).value_or(std::vector<std::string>{});
            entry.recipe = recipe_of(r, name);
            entry.link_inputs = recorded_link_inputs(r);
            // A recipe too large for an entry (huge sources, headers or link inputs) is left out,
            // with the link inputs it needs, so that the cubin is still cached; the margin covers
            // the log and the names.
            constexpr std::uint64_t kMargin = std::uint64_t{1} << 20;
            if (encoded_size(*entry.recipe) + encoded_size(entry.link_inputs) + entry.log.size() +
                    kMargin >
                cache::kMaxMetadataSize) {
                kiln::detail::log_debug("{}: the recipe is too large to keep in the cache entry",
                                        name);
                entry.recipe.reset();
                entry.link_inputs.clear();
            }
            const auto store_start = std::chrono::steady_clock::now();
            store->store(entry);
            program->m_phases.store_ms += ms_since(store_start);
        }
        return program;
    }

    // The slot's program once it is ready (rethrowing its error); waits for another thread's.
    std::shared_ptr<const Program> wait_for(const std::shared_ptr<Slot>& slot) {
        std::unique_lock<std::mutex> lock(mutex);
        ++waiting;
        produced.wait(lock, [&] { return slot->ready; });
        --waiting;
        if (slot->error) std::rethrow_exception(slot->error);
        return slot->program;
    }

    std::shared_ptr<const Program> get(const Request& r, DiskUse use) {
        std::shared_ptr<Slot> slot;
        bool owner = false;
        {
            std::lock_guard<std::mutex> lock(mutex);
            auto found = programs.find(r.key);
            if (found != programs.end()) {
                slot = found->second;
                if (slot->ready && !slot->error) { // the common memory hit: one lock
                    memory_hits.fetch_add(1, std::memory_order_relaxed);
                    return slot->program;
                }
            } else {
                slot = std::make_shared<Slot>();
                programs.emplace(r.key, slot);
                owner = true;
            }
        }
        if (!owner) { // another thread compiles it (or has): wait for it
            memory_hits.fetch_add(1, std::memory_order_relaxed);
            return wait_for(slot);
        }
        bool wake = false;
        try {
            auto program = produce(r, use);
            if (use == DiskUse::read_write && disk_usable())
                detail::log_disk_lookup(*store, *program, [&] { return wanted_entry(r); });
            {
                std::lock_guard<std::mutex> lock(mutex);
                slot->program = program;
                slot->ready = true;
                wake = waiting > 0;
            }
            if (wake) produced.notify_all();
            return program;
        } catch (...) {
            {
                std::lock_guard<std::mutex> lock(mutex);
                slot->error = std::current_exception();
                slot->ready = true;
                // A later call retries (and reports the error again); only this attempt's slot
                // goes (forget() may have let another take the key).
                auto found = programs.find(r.key);
                if (found != programs.end() && found->second == slot) programs.erase(found);
                wake = waiting > 0;
            }
            if (wake) produced.notify_all();
            throw;
        }
    }
};

Compiler::Compiler(cache::Store* store)
    : m_impl(std::make_unique<Impl>()) {
    m_impl->store = store;
}

Compiler::~Compiler() = default;

Compiler& Compiler::global() {
    static Compiler* instance = new Compiler(&cache::Store::global()); // outlives static users
    return *instance;
}

cache::Store* Compiler::store() const noexcept {
    return m_impl->store;
}

CompileStatistics Compiler::statistics() const noexcept {
    CompileStatistics s;
    s.compiles = m_impl->compiles.load(std::memory_order_relaxed);
    s.disk_hits = m_impl->disk_hits.load(std::memory_order_relaxed);
    s.memory_hits = m_impl->memory_hits.load(std::memory_order_relaxed);
    s.memo_hits = m_impl->memo_hits.load(std::memory_order_relaxed);
    return s;
}

// The memo: the program of a generated kernel found without generating its source.

bool Compiler::Impl::memo_usable() const {
    // A memo stands in for the source: not when the source is wanted beside the entry, nor for
    // a compile-time trace, which needs a real compile.
    return disk_usable() && !store->config().save_source && !detail::compile_time_trace_enabled();
}

std::shared_ptr<const Program> Compiler::Impl::from_memo(cache::Memo memo, const std::string& arch,
                                                         double read_ms) {
    const auto holds_kernel = [&](const std::string& cubin) {
        // A memo's cubin is as trusted as an entry's, but it must be the kernel asked for. A
        // cubin whose symbols cannot be read is left to the driver, which names what it lacks.
        const auto held = cache::cubin_kernel_names(cubin);
        return !held || std::find(held->begin(), held->end(), memo.name) != held->end();
    };
    {
        // Compiled or read before in this process (another kernel object, another context).
        std::shared_ptr<Slot> known;
        {
            std::lock_guard<std::mutex> lock(mutex);
            auto found = programs.find(memo.entry);
            if (found != programs.end()) known = found->second;
        }
        if (known) {
            try {
                auto program = wait_for(known);
                if (!holds_kernel(program->cubin())) return nullptr;
                memory_hits.fetch_add(1, std::memory_order_relaxed);
                memo_hits.fetch_add(1, std::memory_order_relaxed);
                return program;
            } catch (const std::exception&) {
                return nullptr; // that compile failed: the caller takes the full path
            }
        }
    }
    if (!holds_kernel(memo.cubin)) return nullptr;
    auto program = std::make_shared<Program>();
    program->m_key = memo.entry;
    program->m_arch = arch;
    program->m_cubin = std::move(memo.cubin);
    program->m_origin = ProgramOrigin::disk_cache;
    program->m_ms = read_ms;
    {
        // Later requests for the key in this process share it, as compile()'s would.
        auto ready = std::make_shared<Slot>();
        ready->program = program;
        ready->ready = true;
        std::lock_guard<std::mutex> lock(mutex);
        programs.emplace(memo.entry, std::move(ready));
    }
    disk_hits.fetch_add(1, std::memory_order_relaxed);
    memo_hits.fetch_add(1, std::memory_order_relaxed);
    return program;
}

GeneratedProgram Compiler::compile(const GeneratedKernel& kernel,
                                   const std::function<std::shared_ptr<const Program>()>& full,
                                   const Program* rejected) {
    Impl& impl = *m_impl;
    if (rejected) {
        // The memo's cubin has no source to recompile it: the full path reads the entry (with
        // the source to recompile it when the driver rejects that too).
        std::lock_guard<std::mutex> lock(impl.mutex);
        impl.programs.erase(rejected->key());
    } else if (kernel.signature && impl.memo_usable()) {
        const auto start = std::chrono::steady_clock::now();
        auto found = impl.store->load_memo(*kernel.signature);
        detail::trace_mark("memo read");
        if (found && found->name == kernel.kernel) {
            if (auto program = impl.from_memo(std::move(*found), kernel.arch, ms_since(start)))
                return {std::move(program), true};
        }
    }
    GeneratedProgram made{full(), false};
    const bool write = kernel.signature && impl.disk_usable() &&
                       !impl.store->config().save_source && !impl.store->config().readonly;
    if (write)
        impl.store->store_memo(*kernel.signature,
                               {made.program->key(), kernel.kernel, made.program->cubin()});
    return made;
}

void Compiler::clear_memory() {
    std::lock_guard<std::mutex> lock(m_impl->mutex);
    for (auto it = m_impl->programs.begin(); it != m_impl->programs.end();)
        it = it->second->ready ? m_impl->programs.erase(it) : std::next(it);
}

cache::Key Compiler::key_for(std::string_view source, const CompileOptions& options) {
    return resolve_request(source, options, m_impl->nvrtc()).key;
}

std::shared_ptr<const Program> Compiler::compile(std::string_view source,
                                                 const CompileOptions& options) {
    return m_impl->get(resolve_request(source, options, m_impl->nvrtc()),
                       options.use_disk_cache ? Impl::DiskUse::read_write : Impl::DiskUse::none);
}

std::shared_ptr<const Program> Compiler::recompile(const Program& program,
                                                   const CompileOptions& options) {
    kiln::detail::log_warn("the driver rejected the cached cubin {}; removing it and recompiling",
                           program.key().hex());
    if (m_impl->disk_usable()) m_impl->store->invalidate(program.key());
    {
        std::lock_guard<std::mutex> lock(m_impl->mutex);
        m_impl->programs.erase(program.key());
    }
    return m_impl->get(resolve_request(program.source(), options, m_impl->nvrtc()),
                       Impl::DiskUse::write_only);
}

std::shared_ptr<const Program>
Compiler::reproduce(const cache::Recipe& recipe, std::string_view arch,
                    const std::vector<cache::LinkInput>& link_inputs) {
    const auto start = std::chrono::steady_clock::now();
    // A recipe Kiln did not write reads nothing but its own headers and the toolkit's.
    if (std::string why = detail::recipe_sandbox_refusal(recipe); !why.empty())
        throw ArgumentError("the recipe is not compiled: " + why);
    CompileOptions options = options_from_recipe(recipe, std::string(arch));
    options.link_inputs = link_inputs_from_entry(link_inputs);
    const Request r = resolve_request(recipe.source, options, m_impl->nvrtc());
    const std::string name =
        recipe.program_name.empty() ? "kiln_" + r.key.hex() + ".cu" : recipe.program_name;
    m_impl->compiles.fetch_add(1, std::memory_order_relaxed);
    const auto nvrtc_start = std::chrono::steady_clock::now();
    NvrtcOutput out = run_nvrtc(r, name);
    auto program = std::make_shared<Program>();
    program->m_phases.nvrtc_ms = ms_since(nvrtc_start);
    program->m_nvrtc_options = std::move(out.options);
    program->m_key = r.key;
    program->m_arch = r.arch;
    program->m_source = r.source;
    program->m_options = r.options;
    program->m_cubin = std::move(out.cubin);
    program->m_log = std::move(out.log);
    program->m_lowered_names = std::move(out.lowered_names);
    program->m_ms = ms_since(start);
    return program;
}

CompileOptions options_from_recipe(const cache::Recipe& recipe, std::string arch) {
    CompileOptions options = CompileOptions::for_arch(std::move(arch));
    options.options = recipe.options;
    options.name_expressions = recipe.name_expressions;
    options.headers.reserve(recipe.headers.size());
    for (const auto& [name, content] : recipe.headers)
        options.headers.push_back({name, content});
    options.cuda_headers = recipe.cuda_headers;
    options.lineinfo = recipe.lineinfo;
    options.description = recipe.description;
    return options;
}

std::vector<LinkInput> link_inputs_from_entry(const std::vector<cache::LinkInput>& recorded) {
    std::vector<LinkInput> inputs;
    for (const auto& input : recorded) {
        if (input.key) {
            if (input.name == kDeviceRuntimeName) continue; // found again from the toolkit
            throw ArgumentError("link input '" + input.name + "' is recorded by the key " +
                                input.key->hex() +
                                ", not by its bytes: Kiln links only inputs "
                                "whose bytes the entry holds");
        }
        inputs.push_back({input.kind, input.name, input.bytes});
    }
    return inputs;
}

CompileOptions options_from_entry(const cache::Entry& entry, std::string arch) {
    if (!entry.recipe)
        throw ArgumentError("cache entry " + entry.key.hex() +
                            " holds no recipe (written by an older Kiln): it cannot be compiled "
                            "again");
    CompileOptions options = options_from_recipe(*entry.recipe, std::move(arch));
    options.link_inputs = link_inputs_from_entry(entry.link_inputs);
    return options;
}

std::shared_ptr<const Program> compile(std::string_view source, const CompileOptions& options) {
    return Compiler::global().compile(source, options);
}

std::string normalize_arch(std::string_view arch) {
    std::string_view digits = arch;
    for (std::string_view prefix : {"sm_", "compute_"})
        if (starts_with(digits, prefix)) digits.remove_prefix(prefix.size());
    std::string suffix;
    if (!digits.empty() && (digits.back() == 'a' || digits.back() == 'f')) {
        suffix = digits.back();
        digits.remove_suffix(1);
    }
    const bool ok = digits.size() >= 2 && digits.size() <= 3 &&
                    std::all_of(digits.begin(), digits.end(),
                                [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    if (!ok)
        throw ArgumentError("'" + std::string(arch) +
                            "' is not a GPU architecture: use a form like sm_90, sm_90a or 80");
    return "sm_" + std::string(digits) + suffix;
}

const std::string& nvrtc_version() {
    return detail::nvrtc_display_version();
}

} // namespace kiln
