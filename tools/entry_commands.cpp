// `kiln cache ls` and `kiln cache show`: the entries of the kernel cache, one line each or one in
// full.

#include "cache_access.hpp"
#include "commands.hpp"
#include "format_size.hpp"
#include "output.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>

namespace kiln::tools {

namespace {

std::int64_t unix_seconds(std::chrono::system_clock::time_point time) {
    return std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
}

std::string local_time(std::chrono::system_clock::time_point time) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
    std::tm parts{};
    ::localtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M", &parts);
    return text;
}

// A kernel's name for people: C++ names demangled ("void fill<3>(int*)"), others as they are.
std::string display_name(const std::string& symbol) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> demangled(
        abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && demangled ? std::string(demangled.get()) : symbol;
}

// "k", "void fill<3>(int*) +2 more", or "-" for an entry without kernels.
std::string kernels_summary(const cache::EntryInfo& info) {
    if (info.kernel_names.empty()) return "-";
    std::string text = display_name(info.kernel_names.front());
    if (info.kernel_names.size() > 1)
        text += " +" + std::to_string(info.kernel_names.size() - 1) + " more";
    return text;
}

void run_ls(bool json) {
    set_json_errors(json);
    cache::Store store(cache_config());
    const auto problems = check_cache_dir(store);
    auto infos = store.list();
    // Most recently used first, as eviction sees them from the other end.
    std::sort(infos.begin(), infos.end(), [](const auto& a, const auto& b) {
        return a.mtime != b.mtime ? a.mtime > b.mtime : a.key < b.key;
    });
    if (json) {
        nlohmann::json entries = nlohmann::json::array();
        for (const auto& info : infos) {
            entries.push_back({{"key", info.key.hex()},
                               {"size", info.size},
                               {"mtime", unix_seconds(info.mtime)},
                               {"arch", info.arch},
                               {"kernels", info.kernel_count},
                               {"kernel_names", info.kernel_names},
                               {"name", kernels_summary(info)},
                               {"nvrtc_version", info.nvrtc_version},
                               {"payload_size", info.payload_size},
                               {"source", info.has_source}});
        }
        // An array as before; shard problems went to stderr.
        print_json(entries);
        return;
    }
    for (const auto& info : infos) {
        std::printf("%s  %10s  %s  %-8s %3zu kernel%s  nvrtc %-9s %s%s\n", info.key.hex().c_str(),
                    format_size(info.size).c_str(), local_time(info.mtime).c_str(),
                    info.arch.c_str(), info.kernel_count, info.kernel_count == 1 ? " " : "s",
                    info.nvrtc_version.c_str(), kernels_summary(info).c_str(),
                    info.has_source ? "  +source" : "");
    }
}

// The key @p text names: all 32 hex digits, or a prefix of exactly one entry's key.
cache::Key resolve_key(cache::Store& store, std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (auto key = cache::Key::from_hex(text)) return *key;
    const bool hex =
        !text.empty() && text.size() < 32 &&
        std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c); });
    if (!hex)
        throw ArgumentError("'" + text +
                            "' is not a cache key: expected hex digits, all 32 or the first few "
                            "(see `kiln cache ls`)");
    check_cache_dir(store);
    std::vector<cache::Key> matches;
    for (const auto& info : store.list())
        if (info.key.hex().compare(0, text.size(), text) == 0) matches.push_back(info.key);
    if (matches.empty())
        throw Error("no entry's key starts with " + text + " in " + store.config().dir.string() +
                    " (see `kiln cache ls`)");
    if (matches.size() > 1) {
        std::sort(matches.begin(), matches.end());
        throw ArgumentError("'" + text + "' is the start of " + std::to_string(matches.size()) +
                            " keys (" + matches[0].hex() + ", " + matches[1].hex() +
                            (matches.size() > 2 ? ", ..." : "") + "): give more digits");
    }
    return matches.front();
}

void write_stdout(const std::string& bytes, const char* what) {
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() ||
        std::fflush(stdout) != 0)
        throw Error(std::string("could not write the ") + what + " to standard output (" +
                    std::strerror(errno) + "); check where it is redirected");
}

struct ShowArgs {
    std::string key;
    bool source = false, cubin = false, log = false, json = false;
};

void print_entry_json(cache::Store& store, const cache::Entry& entry,
                      const std::optional<std::string>& source) {
    nlohmann::json lowered = nlohmann::json::object();
    for (const auto& [expression, name] : entry.lowered_names)
        lowered[expression] = name;
    print_json({{"key", entry.key.hex()},
                {"arch", entry.arch},
                {"nvrtc_version", entry.nvrtc_version},
                {"payload", entry.kind == cache::PayloadKind::cubin ? "cubin" : "ptx"},
                {"payload_size", entry.payload.size()},
                {"compile_ms", entry.compile_ms},
                {"source_path", source ? nlohmann::json(store.source_path(entry.key).string())
                                       : nlohmann::json(nullptr)},
                {"lowered_names", lowered},
                {"log", entry.log}});
}

void run_show(const ShowArgs& args) {
    set_json_errors(args.json);
    cache::Store store(cache_config());
    const cache::Key key = resolve_key(store, args.key);
    std::string why;
    auto entry = store.peek(key, &why);
    if (!entry)
        throw Error("entry " + key.hex() + " in " + store.config().dir.string() + ": " + why +
                    " (see `kiln cache ls`; `kiln cache verify --fix` removes damaged entries)");
    if (args.cubin) {
        if (::isatty(STDOUT_FILENO))
            throw ArgumentError("not writing a binary cubin to a terminal: redirect it, e.g. "
                                "`kiln cache show KEY --cubin > k.cubin`");
        return write_stdout(entry->payload, "cubin");
    }
    if (args.log) {
        write_stdout(entry->log, "log");
        if (!entry->log.empty() && entry->log.back() != '\n') std::printf("\n");
        return;
    }
    const auto source = store.read_source(key);
    if (args.source) {
        if (!source)
            throw Error("no saved source for " + key.hex() +
                        " (KILN_CACHE_SAVE_SOURCE=1 saves sources beside their entries)");
        return write_stdout(*source, "source");
    }
    if (args.json) return print_entry_json(store, *entry, source);
    std::printf("key           %s\n", key.hex().c_str());
    std::printf("arch          %s\n", entry->arch.c_str());
    std::printf("nvrtc         %s\n", entry->nvrtc_version.c_str());
    std::printf("payload       %s, %zu bytes\n",
                entry->kind == cache::PayloadKind::cubin ? "cubin" : "ptx", entry->payload.size());
    std::printf("compile time  %.1f ms\n", entry->compile_ms);
    std::printf("source        %s\n", source ? store.source_path(key).c_str() : "not saved");
    std::printf("names         %zu\n", entry->lowered_names.size());
    for (const auto& [expression, lowered] : entry->lowered_names)
        std::printf("  %s -> %s\n", expression.c_str(), lowered.c_str());
    if (!entry->log.empty()) std::printf("log\n%s\n", entry->log.c_str());
}

} // namespace

void add_entry_commands(CLI::App& cache_cmd) {
    auto ls_json = std::make_shared<bool>(false);
    auto* ls = cache_cmd.add_subcommand(
        "ls", "List entries, most recently used first: key, size, last use, architecture,\n"
              "kernels (the first one's name, +N more), NVRTC version");
    ls->add_flag("--json", *ls_json, "print a JSON array");
    ls->callback([ls_json] { run_ls(*ls_json); });

    auto show_args = std::make_shared<ShowArgs>();
    auto* show = cache_cmd.add_subcommand("show", "Show one entry, or its source, cubin or log");
    show->add_option("key", show_args->key, "the entry's key (32 hex digits, or a unique prefix)")
        ->required();
    auto* source = show->add_flag("--source", show_args->source, "print the saved CUDA source");
    auto* cubin = show->add_flag("--cubin", show_args->cubin, "write the raw cubin to stdout");
    auto* log = show->add_flag("--log", show_args->log, "print NVRTC's log");
    auto* json = show->add_flag("--json", show_args->json, "print the entry as a JSON object");
    source->excludes(cubin)->excludes(log)->excludes(json);
    cubin->excludes(log)->excludes(json);
    log->excludes(json);
    show->callback([show_args] { run_show(*show_args); });
}

} // namespace kiln::tools
