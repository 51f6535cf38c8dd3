// `kiln export FILE` / `kiln import FILE [--verify]`: carry a kernel cache between machines or CI
// runs as one file (the archive format, and what an archive is trusted for, are in
// cache/local/archive.cpp).
//
// --verify compiles each entry's recipe again, under the program name it records (a -lineinfo
// cubin embeds it), for the entry's architecture, and refuses the archive (publishing nothing)
// unless every entry gets back its own key, cubin, lowered names and kernel names. That needs the
// NVRTC that made the archive (the key names it) and the same toolkit headers where a kernel
// includes them. An entry with no recipe (entry format 1) cannot be checked: it is refused too.

#include "cache_access.hpp"
#include "commands.hpp"
#include "format_size.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "recipe_policy.hpp"

#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/cache/local_store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace kiln::tools {

namespace {

struct TransferArgs {
    std::string file;
    bool json = false;
    bool verify = false; // import only
    unsigned jobs = 0;   // import --verify: compiles at once; 0: the number of cores
};

// Why @p entry is not what its recipe compiles to here, or "" when it is.
std::string check_against_recipe(const cache::Entry& entry) {
    if (!entry.recipe)
        return "it holds no recipe (written before entry format 2, or by a writer that kept "
               "none), so it cannot be compiled again to check it";
    if (entry.kind != cache::PayloadKind::cubin) return "its payload is not a cubin";
    if (std::string why = recipe_refusal(*entry.recipe); !why.empty()) return why;
    std::shared_ptr<const Program> program;
    try {
        program = Compiler::global().reproduce(*entry.recipe, entry.arch, entry.link_inputs);
    } catch (const Error& e) {
        const std::string what = e.what();
        return "its recipe does not compile here (" + what.substr(0, what.find('\n')) + ")";
    }
    if (program->key() != entry.key)
        return "its recipe compiles to another key here (" + program->key().hex() +
               "): it was made by another NVRTC (" + entry.nvrtc_version + "; here " +
               nvrtc_version() + ") or Kiln, or its recipe is not the one its key was made from";
    if (program->cubin() != entry.payload)
        return "its cubin differs from the one its recipe compiles to";
    if (program->lowered_names() != entry.lowered_names)
        return "its lowered names differ from the ones its recipe compiles to";
    if (cache::cubin_kernel_names(program->cubin()).value_or(std::vector<std::string>{}) !=
        entry.kernel_names)
        return "its kernel names differ from the cubin's";
    return {};
}

void run_export(const TransferArgs& args) {
    set_json_errors(args.json);
    cache::LocalStore store(cache_config());
    check_cache_dir(store);
    // `-`: the archive is standard output, so the summary goes to standard error.
    const bool to_stdout = args.file == "-";
    if (to_stdout && ::isatty(STDOUT_FILENO))
        throw ArgumentError("kiln export -: standard output is a terminal; redirect it to a file "
                            "or a pipe");
    std::fflush(stdout);
    const auto result = to_stdout ? store.export_to(STDOUT_FILENO) : store.export_to(args.file);
    if (to_stdout) {
        std::fprintf(stderr, "exported %llu entries (%llu sources, %s) to standard output\n",
                     static_cast<unsigned long long>(result.entries),
                     static_cast<unsigned long long>(result.sources),
                     format_size(result.bytes).c_str());
        return;
    }
    if (args.json) {
        print_json({{"file", args.file},
                    {"entries", result.entries},
                    {"sources", result.sources},
                    {"bytes", result.bytes},
                    {"skipped", result.skipped},
                    {"signed", result.signed_now}});
        return;
    }
    std::printf("exported %llu entries (%llu sources, %s) to %s\n",
                static_cast<unsigned long long>(result.entries),
                static_cast<unsigned long long>(result.sources), format_size(result.bytes).c_str(),
                args.file.c_str());
    if (result.skipped)
        std::printf("left out %llu damaged entries\n",
                    static_cast<unsigned long long>(result.skipped));
    if (result.signed_now)
        std::printf("signed %llu entries you compiled with KILN_SIGNING_KEY_FILE\n",
                    static_cast<unsigned long long>(result.signed_now));
}

void run_import(const TransferArgs& args) {
    set_json_errors(args.json);
    const auto config = cache_config();
    require_writable(config, "kiln import");
    cache::LocalStore store(config);
    // --verify compiles every entry: a progress line while it does, from the checks' counts.
    std::atomic<std::size_t> total{0}, done{0}, refused{0};
    const std::uint64_t compiles_before = Compiler::global().statistics().compiles;
    std::mutex output;
    ProgressLine line(
        args.verify && progress_wanted(args.json),
        [&] {
            ProgressCounts counts;
            counts.total = total;
            counts.done = done;
            counts.failures = refused;
            counts.compiles = Compiler::global().statistics().compiles - compiles_before;
            return counts;
        },
        [&](const std::string& text) {
            std::lock_guard<std::mutex> lock(output);
            std::fputs(text.c_str(), stderr);
            std::fflush(stderr);
        });
    const cache::EntryCheck check = [&](const cache::Entry& entry) {
        std::string why = check_against_recipe(entry);
        refused += !why.empty();
        ++done;
        return why;
    };
    const unsigned jobs = args.jobs ? args.jobs : std::max(1u, std::thread::hardware_concurrency());
    const auto result = store.import_from(args.file, args.verify ? check : cache::EntryCheck(),
                                          jobs, [&](std::size_t entries) {
                                              total = entries;
                                              line.start();
                                          });
    line.finish();
    if (args.json) {
        print_json({{"file", args.file},
                    {"dir", config.dir.string()},
                    {"entries", result.entries},
                    {"present", result.present},
                    {"sources", result.sources},
                    {"bytes", result.bytes},
                    {"untrusted", result.untrusted},
                    {"verified", args.verify}});
        return;
    }
    std::printf("imported %llu %sentries (%llu sources, %s) into %s; %llu were already there\n",
                static_cast<unsigned long long>(result.entries), args.verify ? "verified " : "",
                static_cast<unsigned long long>(result.sources), format_size(result.bytes).c_str(),
                config.dir.c_str(), static_cast<unsigned long long>(result.present));
    if (result.untrusted)
        std::printf("left out %llu entries no key in KILN_TRUSTED_KEYS signed\n",
                    static_cast<unsigned long long>(result.untrusted));
}

} // namespace

void add_transfer_commands(CLI::App& app) {
    auto export_args = std::make_shared<TransferArgs>();
    auto* export_cmd =
        app.add_subcommand("export", "Write every verified cache entry (and saved source) to FILE");
    export_cmd
        ->add_option("file", export_args->file,
                     "archive to write: a new or regular file, replaced atomically; `-`: "
                     "standard output")
        ->required();
    export_cmd->add_flag("--json", export_args->json, "print a JSON object");
    export_cmd->callback([export_args] { run_export(*export_args); });

    auto import_args = std::make_shared<TransferArgs>();
    auto* import_cmd = app.add_subcommand(
        "import", "Publish the entries of an archive made by `kiln export`, all or nothing: the\n"
                  "whole archive is verified first. An archive can place any cubin under any\n"
                  "key: import only archives you trust, or use --verify.");
    import_cmd->add_option("file", import_args->file, "archive to read")->required();
    import_cmd->add_flag("--verify", import_args->verify,
                         "compile each entry's recipe again (same NVRTC needed) and refuse the\n"
                         "archive unless every cubin is the one its recipe makes; entries\n"
                         "without a recipe are refused");
    import_cmd->add_option("-j,--jobs", import_args->jobs,
                           "--verify: compiles at once (default: the number of cores)");
    import_cmd->add_flag("--json", import_args->json, "print a JSON object");
    import_cmd->callback([import_args] { run_import(*import_args); });
}

} // namespace kiln::tools
