// `kiln cache remote ping|stats`: check the remote tier's configuration (KILN_REMOTE_CACHE and
// companions) by hand; and the wait for pending publishes that `kiln compile` and `kiln warm`
// make before they exit.

#include "commands.hpp"
#include "format_size.hpp"
#include "output.hpp"

#include "kiln/cache/remote.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>

namespace kiln::tools {

namespace {

cache::RemoteConfig remote_config() {
    auto remote = cache::RemoteConfig::from_environment();
    if (!remote)
        throw Error("no remote cache is configured: set KILN_REMOTE_CACHE, e.g. "
                    "KILN_REMOTE_CACHE=redis://127.0.0.1:6379/0");
    return *remote;
}

nlohmann::json stats_json(const cache::RemoteStats& s) {
    const std::uint64_t lookups = s.hits + s.misses;
    return {{"hits", s.hits},
            {"misses", s.misses},
            {"hit_rate",
             lookups ? nlohmann::json(static_cast<double>(s.hits) / static_cast<double>(lookups))
                     : nlohmann::json(nullptr)},
            {"damaged", s.damaged},
            {"untrusted", s.untrusted},
            {"errors", s.errors},
            {"timeouts", s.timeouts},
            {"skipped", s.skipped},
            {"stores", s.stores},
            {"bytes_read", s.bytes_read},
            {"bytes_written", s.bytes_written}};
}

void run_ping(bool json) {
    set_json_errors(json);
    const auto remote = remote_config();
    const auto ping = cache::ping_remote(remote);
    if (!ping.ok)
        throw Error(ping.error + ". Check KILN_REMOTE_CACHE (and the password file) "
                                 "and that the server runs and is reachable from here");
    const double deadline_ms = static_cast<double>(remote.op_timeout.count());
    if (json) {
        print_json({{"url", remote.display_url()},
                    {"mode", cache::to_string(remote.mode)},
                    {"ok", true},
                    {"connect_ms", ping.connect_ms},
                    {"latency_ms", ping.latency_ms},
                    {"server_version", ping.server_version},
                    {"op_timeout_ms", remote.op_timeout.count()},
                    {"connect_timeout_ms", remote.connect_timeout.count()}});
        return;
    }
    std::printf("PONG from %s (Redis %s, %s): connect %.2f ms, round trip %.3f ms\n",
                remote.display_url().c_str(),
                ping.server_version.empty() ? "?" : ping.server_version.c_str(),
                cache::to_string(remote.mode), ping.connect_ms, ping.latency_ms);
    if (ping.latency_ms > deadline_ms / 2 ||
        ping.connect_ms > static_cast<double>(remote.connect_timeout.count()) / 2)
        std::fprintf(
            stderr,
            "kiln: warning: the server answers in more than half of the deadlines "
            "(KILN_REMOTE_CACHE_TIMEOUT=%lldms, KILN_REMOTE_CACHE_CONNECT_TIMEOUT=%lldms): "
            "raise them or lookups will often time out\n",
            static_cast<long long>(remote.op_timeout.count()),
            static_cast<long long>(remote.connect_timeout.count()));
}

void run_remote_stats(bool json) {
    set_json_errors(json);
    const auto remote = remote_config();
    // The counters every process added to the cache directory (none in remote-only mode).
    cache::Store store(cache::Config::from_environment());
    const auto counters = store.remote_stats();
    const auto server = cache::remote_server_info(remote);
    if (json) {
        nlohmann::json j = {{"url", remote.display_url()},
                            {"mode", cache::to_string(remote.mode)},
                            {"counters", stats_json(counters)}};
        nlohmann::json s = {{"ok", server.ok}};
        if (server.ok) {
            s["kiln_keys"] = server.kiln_keys;
            s["used_memory"] = server.used_memory;
            s["max_memory"] = server.max_memory;
            s["eviction_policy"] = server.eviction_policy;
            s["version"] = server.server_version;
        } else {
            s["error"] = server.error;
        }
        j["server"] = s;
        print_json(j);
    } else {
        std::printf("remote cache     %s (%s)\n", remote.display_url().c_str(),
                    cache::to_string(remote.mode));
        print_remote_counters(counters);
        if (server.ok) {
            std::printf("server           Redis %s\n", server.server_version.c_str());
            std::printf("kiln keys        %llu\n",
                        static_cast<unsigned long long>(server.kiln_keys));
            std::printf("used memory      %s of %s (%s)\n", format_size(server.used_memory).c_str(),
                        server.max_memory ? format_size(server.max_memory).c_str() : "no limit",
                        server.eviction_policy.c_str());
        }
    }
    if (!server.ok) {
        std::fflush(stdout);
        std::fprintf(stderr, "kiln: %s\n", server.error.c_str());
        throw CLI::RuntimeError(1);
    }
}

} // namespace

void print_remote_counters(const cache::RemoteStats& s) {
    const std::uint64_t lookups = s.hits + s.misses;
    std::printf("remote hits      %llu", static_cast<unsigned long long>(s.hits));
    if (lookups)
        std::printf(" (%.1f%%)",
                    100.0 * static_cast<double>(s.hits) / static_cast<double>(lookups));
    std::printf("\nremote misses    %llu\n", static_cast<unsigned long long>(s.misses));
    std::printf("remote damaged   %llu\n", static_cast<unsigned long long>(s.damaged));
    if (s.untrusted)
        std::printf("remote untrusted %llu\n", static_cast<unsigned long long>(s.untrusted));
    std::printf("remote errors    %llu\n", static_cast<unsigned long long>(s.errors));
    std::printf("remote timeouts  %llu\n", static_cast<unsigned long long>(s.timeouts));
    std::printf("remote skipped   %llu\n", static_cast<unsigned long long>(s.skipped));
    std::printf("remote stores    %llu\n", static_cast<unsigned long long>(s.stores));
    std::printf("remote read      %s\n", format_size(s.bytes_read).c_str());
    std::printf("remote written   %s\n", format_size(s.bytes_written).c_str());
}

nlohmann::json remote_stats_json(const cache::RemoteStats& stats) {
    return stats_json(stats);
}

void wait_for_remote_publishes() {
    if (auto* store = Compiler::global().store()) store->flush_remote();
}

void add_remote_commands(CLI::App& cache_cmd) {
    auto* remote = cache_cmd.add_subcommand(
        "remote", "Check the remote cache (KILN_REMOTE_CACHE): ping, stats");
    remote->require_subcommand(1);

    auto ping_json = std::make_shared<bool>(false);
    auto* ping = remote->add_subcommand(
        "ping", "Connect, authenticate, select the database and PING; print the latency and the "
                "server's version; exit 1 if it fails");
    ping->add_flag("--json", *ping_json, "print a JSON object");
    ping->callback([ping_json] { run_ping(*ping_json); });

    auto stats_json_flag = std::make_shared<bool>(false);
    auto* stats = remote->add_subcommand(
        "stats", "The remote tier's counters (summed over the processes that used the cache "
                 "directory) and the server's figures: Kiln keys, memory used");
    stats->add_flag("--json", *stats_json_flag, "print a JSON object");
    stats->callback([stats_json_flag] { run_remote_stats(*stats_json_flag); });
}

} // namespace kiln::tools
