#pragma once
// Each `kiln` subcommand registers itself on the CLI11 app; main.cpp only wires them together.

#include "kiln/cache/remote.hpp"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace kiln::tools {

/// `kiln compile FILE.cu --arch sm_90 [--name-expr E]... [--json] [-o OUT] [-- NVRTC options]`
void add_compile_command(CLI::App& app);
/// `kiln demo`: compile, cache and (with a GPU) run and time the seed examples.
void add_demo_command(CLI::App& app);
/// `kiln warm MANIFEST --arch sm_90[,sm_80...] [-j N] [--json]`, or `kiln warm --from-cache DIR
/// --arch ...` (warm_from_cache.hpp)
void add_warm_command(CLI::App& app);
/// `kiln cache dir|stats|ls|verify|prune|clear|show|config`
void add_cache_commands(CLI::App& app);
/// `kiln cache ls`, `kiln cache show` (on the `cache` subcommand)
void add_entry_commands(CLI::App& cache_cmd);
/// `kiln cache explain FILE|KEY`: why a key misses (on the `cache` subcommand)
void add_explain_command(CLI::App& cache_cmd);
/// `kiln cache config [KEY [VALUE]]` (on the `cache` subcommand)
void add_config_command(CLI::App& cache_cmd);
/// `kiln cache remote ping|stats` (on the `cache` subcommand)
void add_remote_commands(CLI::App& cache_cmd);
/// The remote tier's counters as `kiln cache stats` prints them, text and JSON.
void print_remote_counters(const cache::RemoteStats& stats);
nlohmann::json remote_stats_json(const cache::RemoteStats& stats);
/// Wait for the global store's pending remote publishes (`kiln compile`, `kiln warm`).
void wait_for_remote_publishes();
/// `kiln export FILE`, `kiln import FILE`
void add_transfer_commands(CLI::App& app);
/// `kiln key generate NAME`: a key pair for signed entries
void add_key_command(CLI::App& app);

/// `kiln help [environment [--markdown]]`: the general help, or every KILN_* variable from the
/// settings table (kiln/settings.hpp)
void add_help_command(CLI::App& app);

/// Check every Kiln environment variable, so that a value that does not parse is an error on
/// every run. @throws kiln::ConfigError naming the variable.
void check_environment();

} // namespace kiln::tools
