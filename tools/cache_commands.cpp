// `kiln cache ...`: look into the kernel cache and keep it in shape (KILN_CACHE_DIR or the
// default directory; the README's environment table lists the variables).

#include "commands.hpp"
#include "format_size.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/env.hpp"
#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <limits>
#include <memory>

namespace kiln::tools {

namespace {

cache::Store open_store() {
    return cache::Store(cache::Config::from_environment());
}

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

/// "7d", "12h", "30m", "45s" (also "w" for weeks).
std::chrono::seconds parse_age(const std::string& text) {
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits])))
        ++digits;
    const std::string unit = text.substr(digits);
    const std::int64_t per_unit = unit == "s"   ? 1
                                  : unit == "m" ? 60
                                  : unit == "h" ? 3600
                                  : unit == "d" ? 86400
                                  : unit == "w" ? 7 * 86400
                                                : 0;
    if (digits == 0 || digits > 9 || per_unit == 0)
        throw ArgumentError("--max-age '" + text +
                            "' is not an age: use a number with s, m, h, d or w (e.g. 7d, 12h)");
    return std::chrono::seconds(std::stoll(text.substr(0, digits)) * per_unit);
}

cache::Key parse_key(const std::string& text) {
    auto key = cache::Key::from_hex(text);
    if (!key)
        throw ArgumentError("'" + text +
                            "' is not a cache key: expected 32 hex digits (see "
                            "`kiln cache ls`)");
    return *key;
}

void run_stats(bool json) {
    auto store = open_store();
    const auto stats = store.stats();
    const auto& config = store.config();
    if (json) {
        nlohmann::json j;
        j["dir"] = config.dir.string();
        j["entries"] = stats.entries;
        j["bytes"] = stats.bytes;
        j["max_size"] = config.max_size;
        j["hits"] = stats.hits;
        j["misses"] = stats.misses;
        j["damaged"] = stats.damaged;
        j["evicted"] = stats.evicted;
        j["stores"] = stats.stores;
        std::cout << j.dump(2) << '\n';
        return;
    }
    const std::uint64_t lookups = stats.hits + stats.misses;
    std::printf("cache directory  %s\n", config.dir.c_str());
    std::printf("entries          %llu\n", static_cast<unsigned long long>(stats.entries));
    std::printf("size             %s of %s\n", format_size(stats.bytes).c_str(),
                config.max_size ? format_size(config.max_size).c_str() : "no limit");
    std::printf("hits             %llu", static_cast<unsigned long long>(stats.hits));
    if (lookups) std::printf(" (%.1f%%)", 100.0 * static_cast<double>(stats.hits) / lookups);
    std::printf("\nmisses           %llu\n", static_cast<unsigned long long>(stats.misses));
    std::printf("damaged          %llu\n", static_cast<unsigned long long>(stats.damaged));
    std::printf("evicted          %llu\n", static_cast<unsigned long long>(stats.evicted));
    std::printf("stores           %llu\n", static_cast<unsigned long long>(stats.stores));
}

void run_ls(bool json) {
    auto store = open_store();
    auto infos = store.list();
    // Most recently used first, as eviction sees them from the other end.
    std::sort(infos.begin(), infos.end(), [](const auto& a, const auto& b) {
        return a.mtime != b.mtime ? a.mtime > b.mtime : a.key < b.key;
    });
    if (json) {
        nlohmann::json j = nlohmann::json::array();
        for (const auto& info : infos) {
            j.push_back({{"key", info.key.hex()},
                         {"size", info.size},
                         {"mtime", unix_seconds(info.mtime)},
                         {"arch", info.arch},
                         {"kernels", info.kernel_count},
                         {"nvrtc_version", info.nvrtc_version},
                         {"payload_size", info.payload_size},
                         {"source", info.has_source}});
        }
        std::cout << j.dump(2) << '\n';
        return;
    }
    for (const auto& info : infos) {
        std::printf("%s  %10s  %s  %-8s %3zu name%s  nvrtc %s%s\n", info.key.hex().c_str(),
                    format_size(info.size).c_str(), local_time(info.mtime).c_str(),
                    info.arch.c_str(), info.kernel_count, info.kernel_count == 1 ? " " : "s",
                    info.nvrtc_version.c_str(), info.has_source ? "  +source" : "");
    }
}

void run_verify(bool fix) {
    auto store = open_store();
    const auto result = store.verify(fix);
    for (const auto& [path, problem] : result.problems)
        std::printf("damaged %s: %s%s\n", path.c_str(), problem.c_str(), fix ? " (removed)" : "");
    std::printf("checked %llu entries: %llu ok, %llu damaged",
                static_cast<unsigned long long>(result.checked),
                static_cast<unsigned long long>(result.ok),
                static_cast<unsigned long long>(result.damaged));
    if (fix) std::printf(", %llu removed", static_cast<unsigned long long>(result.removed));
    std::printf("\n");
    if (result.damaged > result.removed) {
        std::fflush(stdout);
        std::fprintf(stderr, "kiln: damaged entries found%s\n",
                     fix ? " and not all could be removed"
                         : "; `kiln cache verify --fix` removes them");
        throw CLI::RuntimeError(1);
    }
}

void print_removed(const cache::PruneResult& result) {
    std::printf("removed %llu entries (%s)", static_cast<unsigned long long>(result.entries),
                format_size(result.bytes).c_str());
    if (result.temporaries)
        std::printf(" and %llu stale temporary files",
                    static_cast<unsigned long long>(result.temporaries));
    std::printf("\n");
}

struct PruneArgs {
    std::string max_size;
    std::string max_age;
};

void run_prune(const PruneArgs& args) {
    auto store = open_store();
    std::uint64_t max_size = store.config().max_size;
    // KILN_CACHE_MAX_SIZE=0 means no limit; an explicit --max-size 0 means empty the cache.
    if (max_size == 0) max_size = std::numeric_limits<std::uint64_t>::max();
    if (!args.max_size.empty()) max_size = env::parse_size(args.max_size, "--max-size");
    std::optional<std::chrono::seconds> max_age;
    if (!args.max_age.empty()) max_age = parse_age(args.max_age);
    print_removed(store.prune(max_size, max_age));
}

struct ShowArgs {
    std::string key;
    bool source = false, cubin = false, log = false;
};

void run_show(const ShowArgs& args) {
    const cache::Key key = parse_key(args.key);
    auto store = open_store();
    std::string why;
    auto entry = store.peek(key, &why);
    if (!entry)
        throw Error("entry " + key.hex() + " in " + store.config().dir.string() + ": " + why);
    if (args.cubin) {
        if (::isatty(STDOUT_FILENO))
            throw ArgumentError("not writing a binary cubin to a terminal: redirect it, e.g. "
                                "`kiln cache show KEY --cubin > k.cubin`");
        std::fwrite(entry->payload.data(), 1, entry->payload.size(), stdout);
        if (std::fflush(stdout) != 0) throw Error("could not write the cubin to stdout");
        return;
    }
    if (args.log) {
        std::fwrite(entry->log.data(), 1, entry->log.size(), stdout);
        if (!entry->log.empty() && entry->log.back() != '\n') std::printf("\n");
        return;
    }
    const auto source = store.read_source(key);
    if (args.source) {
        if (!source)
            throw Error("no saved source for " + key.hex() +
                        " (KILN_CACHE_SAVE_SOURCE=1 saves sources beside their entries)");
        std::fwrite(source->data(), 1, source->size(), stdout);
        return;
    }
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

void add_cache_commands(CLI::App& app) {
    auto* cache_cmd = app.add_subcommand(
        "cache", "Inspect and maintain the kernel cache (KILN_CACHE_DIR, default "
                 "$XDG_CACHE_HOME/kiln or ~/.cache/kiln)");
    cache_cmd->require_subcommand(1);

    cache_cmd->add_subcommand("dir", "Print the cache directory")->callback([] {
        std::printf("%s\n", cache::Config::from_environment().dir.c_str());
    });

    auto stats_json = std::make_shared<bool>(false);
    auto* stats =
        cache_cmd->add_subcommand("stats", "Hits, misses, damaged, evicted, entries, size");
    stats->add_flag("--json", *stats_json, "print a JSON object");
    stats->callback([stats_json] { run_stats(*stats_json); });

    auto ls_json = std::make_shared<bool>(false);
    auto* ls = cache_cmd->add_subcommand("ls", "List entries, most recently used first");
    ls->add_flag("--json", *ls_json, "print a JSON array");
    ls->callback([ls_json] { run_ls(*ls_json); });

    auto fix = std::make_shared<bool>(false);
    auto* verify = cache_cmd->add_subcommand(
        "verify", "Read and check every entry; exit 1 if damage is found and not fixed");
    verify->add_flag("--fix", *fix, "remove damaged entries");
    verify->callback([fix] { run_verify(*fix); });

    auto prune_args = std::make_shared<PruneArgs>();
    auto* prune = cache_cmd->add_subcommand(
        "prune",
        "Evict least recently used entries down to a size, and/or those unused for an age");
    prune->add_option("--max-size", prune_args->max_size,
                      "size to keep at most, e.g. 500M (default: KILN_CACHE_MAX_SIZE)");
    prune->add_option("--max-age", prune_args->max_age,
                      "remove entries unused for longer, e.g. 7d, 12h, 30m");
    prune->callback([prune_args] { run_prune(*prune_args); });

    cache_cmd->add_subcommand("clear", "Remove every entry (statistics are kept)")->callback([] {
        print_removed(open_store().clear());
    });

    auto show_args = std::make_shared<ShowArgs>();
    auto* show = cache_cmd->add_subcommand("show", "Show one entry, or its source, cubin or log");
    show->add_option("key", show_args->key, "the entry's key (32 hex digits)")->required();
    auto* source = show->add_flag("--source", show_args->source, "print the saved CUDA source");
    auto* cubin = show->add_flag("--cubin", show_args->cubin, "write the raw cubin to stdout");
    auto* log = show->add_flag("--log", show_args->log, "print NVRTC's log");
    source->excludes(cubin)->excludes(log);
    cubin->excludes(log);
    show->callback([show_args] { run_show(*show_args); });
}

} // namespace kiln::tools
