// `kiln cache dir|stats|verify|prune|clear`: look into the kernel cache and keep it in shape
// (KILN_CACHE_DIR or the default directory; docs/environment.md). `ls` and `show` are
// in entry_commands.cpp, `config` in config_command.cpp.

#include "cache_access.hpp"
#include "commands.hpp"
#include "compile_error.hpp"
#include "format_size.hpp"
#include "output.hpp"

#include "kiln/cache/store.hpp"
#include "kiln/env.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include <nlohmann/json.hpp>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>

namespace kiln::tools {

namespace {

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

struct StatsArgs {
    bool json = false, zero = false;
};

void run_zero_stats(const StatsArgs& args) {
    const auto config = cache_config();
    require_writable(config, "kiln cache stats --zero");
    cache::LocalStore store(config);
    check_cache_dir(store);
    // A counter file another process keeps locked is waited for briefly, then named: a member of
    // a shared cache can hold a lock for good.
    if (const auto result = store.zero_stats(); !result) {
        std::string files;
        nlohmann::json not_zeroed = nlohmann::json::array();
        for (const auto& [path, why] : result.not_zeroed) {
            files += "\n  " + path.string() + " (" + why + ")";
            not_zeroed.push_back({{"path", path.string()}, {"why", why}});
        }
        throw DetailedError("the statistics in " + config.dir.string() + " were reset but for " +
                                std::to_string(result.not_zeroed.size()) +
                                " counter file(s):" + files +
                                "\ntry again once their locks are free; `kiln cache verify` "
                                "lists files that are not Kiln's",
                            "error", {{"dir", config.dir.string()}, {"not_zeroed", not_zeroed}});
    }
    if (args.json)
        print_json({{"dir", config.dir.string()}, {"zeroed", true}});
    else
        std::printf("statistics zeroed in %s\n", config.dir.c_str());
}

void run_stats(const StatsArgs& args) {
    set_json_errors(args.json);
    if (args.zero) return run_zero_stats(args);
    cache::Store store(cache_config());
    const auto problems = check_cache_dir(store.local());
    const auto stats = store.local().stats();
    const auto remote = store.remote_stats();
    const auto& config = store.config();
    const std::uint64_t lookups = stats.hits + stats.misses;
    if (args.json) {
        nlohmann::json j;
        j["dir"] = config.dir.string();
        j["entries"] = stats.entries;
        j["memos"] = stats.memos;
        j["bytes"] = stats.bytes;
        j["max_size"] = config.max_size;
        j["hits"] = stats.hits;
        j["misses"] = stats.misses;
        // null before the first lookup: no rate to speak of.
        j["hit_rate"] =
            lookups ? nlohmann::json(static_cast<double>(stats.hits) / static_cast<double>(lookups))
                    : nlohmann::json(nullptr);
        j["damaged"] = stats.damaged;
        j["evicted"] = stats.evicted;
        j["stores"] = stats.stores;
        j["untrusted"] = stats.untrusted;
        // The remote tier: its configuration (null without one) and its counters, summed over
        // the processes that used this directory.
        j["remote"] = config.remote
                          ? nlohmann::json({{"url", config.remote->display_url()},
                                            {"mode", cache::to_string(config.remote->mode)}})
                          : nlohmann::json(nullptr);
        j["remote_stats"] = remote_stats_json(remote);
        j["problems"] = problems_json(problems);
        print_json(j);
        return;
    }
    std::printf("cache directory  %s\n", config.dir.c_str());
    std::printf("entries          %llu\n", static_cast<unsigned long long>(stats.entries));
    std::printf("memos            %llu\n", static_cast<unsigned long long>(stats.memos));
    std::printf("size             %s of %s\n", format_size(stats.bytes).c_str(),
                config.max_size ? format_size(config.max_size).c_str() : "no limit");
    std::printf("hits             %llu", static_cast<unsigned long long>(stats.hits));
    if (lookups)
        std::printf(" (%.1f%%)",
                    100.0 * static_cast<double>(stats.hits) / static_cast<double>(lookups));
    std::printf("\nmisses           %llu\n", static_cast<unsigned long long>(stats.misses));
    std::printf("damaged          %llu\n", static_cast<unsigned long long>(stats.damaged));
    std::printf("evicted          %llu\n", static_cast<unsigned long long>(stats.evicted));
    std::printf("stores           %llu\n", static_cast<unsigned long long>(stats.stores));
    if (stats.untrusted || config.trusted_keys)
        std::printf("untrusted        %llu\n", static_cast<unsigned long long>(stats.untrusted));
    if (config.remote) {
        std::printf("remote cache     %s (%s)\n", config.remote->display_url().c_str(),
                    cache::to_string(config.remote->mode));
    }
    if (config.remote || remote.hits + remote.misses + remote.stores + remote.skipped != 0)
        print_remote_counters(remote);
}

struct VerifyArgs {
    bool fix = false, json = false;
};

void run_verify(const VerifyArgs& args) {
    set_json_errors(args.json);
    const auto config = cache_config();
    if (args.fix) require_writable(config, "kiln cache verify --fix");
    cache::LocalStore store(config);
    // Shard problems are among verify's own findings: only a fatal one is checked here.
    check_cache_dir(store, false);
    const auto result = store.verify(args.fix);
    const bool failed = result.damaged + result.untrusted > result.removed;
    if (args.json) {
        nlohmann::json problems = nlohmann::json::array();
        for (const auto& [path, problem] : result.problems)
            problems.push_back({{"path", path.string()}, {"what", problem}});
        print_json({{"dir", config.dir.string()},
                    {"checked", result.checked},
                    {"ok", result.ok},
                    {"damaged", result.damaged},
                    {"untrusted", result.untrusted},
                    {"removed", result.removed},
                    {"fixed", args.fix},
                    {"signers", result.vouched},
                    {"problems", problems}});
    } else {
        constexpr std::string_view kUntrusted = "untrusted: ";
        for (const auto& [path, problem] : result.problems) {
            if (problem.rfind(kUntrusted, 0) == 0) {
                std::printf("untrusted %s: %s\n", path.c_str(),
                            problem.substr(kUntrusted.size()).c_str());
                continue;
            }
            std::printf("damaged %s: %s%s\n", path.c_str(), problem.c_str(),
                        args.fix && problem.find("(removed)") == std::string::npos ? " (removed)"
                                                                                   : "");
        }
        for (const auto& [who, count] : result.vouched)
            std::printf("%llu %s %s\n", static_cast<unsigned long long>(count),
                        count == 1 ? "entry" : "entries", who.c_str());
        std::printf("checked %llu entries, memos and read-ahead lists: %llu ok, %llu damaged",
                    static_cast<unsigned long long>(result.checked),
                    static_cast<unsigned long long>(result.ok),
                    static_cast<unsigned long long>(result.damaged));
        if (result.untrusted)
            std::printf(", %llu untrusted", static_cast<unsigned long long>(result.untrusted));
        if (args.fix)
            std::printf(", %llu removed", static_cast<unsigned long long>(result.removed));
        std::printf("\n");
    }
    if (failed) {
        std::fflush(stdout);
        std::fprintf(stderr, "kiln: %s found in %s%s\n",
                     result.damaged ? "damage" : "entries no trusted key signed",
                     config.dir.c_str(),
                     args.fix ? " and not all of it could be removed; remove it by hand"
                              : "; `kiln cache verify --fix` removes it");
        throw CLI::RuntimeError(1);
    }
}

void print_removed(const cache::PruneResult& result, bool json) {
    if (json) {
        print_json({{"entries", result.entries},
                    {"memos", result.memos},
                    {"bytes", result.bytes},
                    {"temporaries", result.temporaries},
                    {"not_removed", result.not_removed}});
        if (result.not_removed) throw CLI::RuntimeError(1);
        return;
    }
    std::printf("removed %llu entries", static_cast<unsigned long long>(result.entries));
    if (result.memos) std::printf(" and %llu memos", static_cast<unsigned long long>(result.memos));
    std::printf(" (%s)", format_size(result.bytes).c_str());
    if (result.temporaries)
        std::printf(" and %llu stale temporary files",
                    static_cast<unsigned long long>(result.temporaries));
    std::printf("\n");
    if (result.not_removed) {
        std::fflush(stdout);
        std::fprintf(stderr, "kiln: %llu entries or memos could not be removed (%s)\n",
                     static_cast<unsigned long long>(result.not_removed),
                     std::strerror(result.error));
        throw CLI::RuntimeError(1);
    }
}

struct PruneArgs {
    std::string max_size;
    std::string max_age;
    bool json = false;
};

void run_prune(const PruneArgs& args) {
    set_json_errors(args.json);
    const auto config = cache_config();
    require_writable(config, "kiln cache prune");
    // The limit in force: KILN_CACHE_MAX_SIZE, else the cache's max-size setting, else the
    // variable's default.
    std::uint64_t max_size = config.max_size;
    // A limit of 0 means no limit; an explicit --max-size 0 means empty the cache.
    if (max_size == 0) max_size = std::numeric_limits<std::uint64_t>::max();
    if (!args.max_size.empty()) max_size = env::parse_size(args.max_size, "--max-size");
    std::optional<std::chrono::seconds> max_age;
    if (!args.max_age.empty()) max_age = parse_age(args.max_age);
    cache::LocalStore store(config);
    check_cache_dir(store);
    print_removed(store.prune(max_size, max_age), args.json);
}

void run_clear(bool json) {
    set_json_errors(json);
    const auto config = cache_config();
    require_writable(config, "kiln cache clear");
    cache::LocalStore store(config);
    check_cache_dir(store);
    print_removed(store.clear(), json);
}

} // namespace

void add_cache_commands(CLI::App& app) {
    auto* cache_cmd = app.add_subcommand(
        "cache", "Inspect and maintain the kernel cache (KILN_CACHE_DIR, default "
                 "$XDG_CACHE_HOME/kiln or ~/.cache/kiln)");
    cache_cmd->require_subcommand(1);

    auto dir_json = std::make_shared<bool>(false);
    auto* dir = cache_cmd->add_subcommand("dir", "Print the cache directory");
    dir->add_flag("--json", *dir_json, "print a JSON object");
    dir->callback([dir_json] {
        set_json_errors(*dir_json);
        const auto config = cache_config();
        if (*dir_json)
            print_json({{"dir", config.dir.string()}});
        else
            std::printf("%s\n", config.dir.c_str());
    });

    auto stats_args = std::make_shared<StatsArgs>();
    auto* stats = cache_cmd->add_subcommand(
        "stats", "Hits, misses, damaged, evicted, entries, size; --zero resets the counters");
    stats->add_flag("--json", stats_args->json, "print a JSON object");
    stats->add_flag("-z,--zero", stats_args->zero, "set the counters to zero (entries are kept)");
    stats->callback([stats_args] { run_stats(*stats_args); });

    add_entry_commands(*cache_cmd);
    add_explain_command(*cache_cmd);

    auto verify_args = std::make_shared<VerifyArgs>();
    auto* verify = cache_cmd->add_subcommand(
        "verify", "Read and check every entry; exit 1 if damage is found and not fixed");
    verify->add_flag("--fix", verify_args->fix,
                     "remove damaged entries, and with KILN_TRUSTED_KEYS untrusted ones");
    verify->add_flag("--json", verify_args->json, "print a JSON object");
    verify->callback([verify_args] { run_verify(*verify_args); });

    auto prune_args = std::make_shared<PruneArgs>();
    auto* prune = cache_cmd->add_subcommand(
        "prune",
        "Evict least recently used entries down to a size, and/or those unused for an age");
    prune->add_option("--max-size", prune_args->max_size,
                      "size to keep at most, e.g. 500M (default: KILN_CACHE_MAX_SIZE, else the "
                      "max-size setting, else " +
                          std::string(settings::definition(Variable::cache_max_size).default_text) +
                          ")");
    prune->add_option("--max-age", prune_args->max_age,
                      "remove entries unused for longer, e.g. 7d, 12h, 30m");
    prune->add_flag("--json", prune_args->json, "print a JSON object");
    prune->callback([prune_args] { run_prune(*prune_args); });

    auto clear_json = std::make_shared<bool>(false);
    auto* clear =
        cache_cmd->add_subcommand("clear", "Remove every entry (statistics and settings are kept)");
    clear->add_flag("--json", *clear_json, "print a JSON object");
    clear->callback([clear_json] { run_clear(*clear_json); });

    add_config_command(*cache_cmd);
    add_remote_commands(*cache_cmd);
}

} // namespace kiln::tools
