// `kiln export FILE` / `kiln import FILE`: carry a kernel cache between machines or CI runs as one
// file (the archive format, and what an archive is trusted for, are in cache/archive.cpp).

#include "cache_access.hpp"
#include "commands.hpp"
#include "format_size.hpp"
#include "output.hpp"

#include "kiln/cache/store.hpp"

#include <cstdio>
#include <memory>
#include <string>

namespace kiln::tools {

namespace {

struct TransferArgs {
    std::string file;
    bool json = false;
};

void run_export(const TransferArgs& args) {
    set_json_errors(args.json);
    cache::Store store(cache_config());
    check_cache_dir(store);
    const auto result = store.export_to(args.file);
    if (args.json) {
        print_json({{"file", args.file},
                    {"entries", result.entries},
                    {"sources", result.sources},
                    {"bytes", result.bytes},
                    {"skipped", result.skipped}});
        return;
    }
    std::printf("exported %llu entries (%llu sources, %s) to %s\n",
                static_cast<unsigned long long>(result.entries),
                static_cast<unsigned long long>(result.sources), format_size(result.bytes).c_str(),
                args.file.c_str());
    if (result.skipped)
        std::printf("left out %llu damaged entries\n",
                    static_cast<unsigned long long>(result.skipped));
}

void run_import(const TransferArgs& args) {
    set_json_errors(args.json);
    const auto config = cache_config();
    require_writable(config, "kiln import");
    cache::Store store(config);
    const auto result = store.import_from(args.file);
    if (args.json) {
        print_json({{"file", args.file},
                    {"dir", config.dir.string()},
                    {"entries", result.entries},
                    {"present", result.present},
                    {"sources", result.sources},
                    {"bytes", result.bytes}});
        return;
    }
    std::printf("imported %llu entries (%llu sources, %s) into %s; %llu were already there\n",
                static_cast<unsigned long long>(result.entries),
                static_cast<unsigned long long>(result.sources), format_size(result.bytes).c_str(),
                config.dir.c_str(), static_cast<unsigned long long>(result.present));
}

} // namespace

void add_transfer_commands(CLI::App& app) {
    auto export_args = std::make_shared<TransferArgs>();
    auto* export_cmd =
        app.add_subcommand("export", "Write every verified cache entry (and saved source) to FILE");
    export_cmd->add_option("file", export_args->file, "archive to write (replaced atomically)")
        ->required();
    export_cmd->add_flag("--json", export_args->json, "print a JSON object");
    export_cmd->callback([export_args] { run_export(*export_args); });

    auto import_args = std::make_shared<TransferArgs>();
    auto* import_cmd = app.add_subcommand(
        "import", "Publish the entries of an archive made by `kiln export`, all or nothing: the\n"
                  "whole archive is verified first. An archive can place any cubin under any\n"
                  "key: import only archives you trust.");
    import_cmd->add_option("file", import_args->file, "archive to read")->required();
    import_cmd->add_flag("--json", import_args->json, "print a JSON object");
    import_cmd->callback([import_args] { run_import(*import_args); });
}

} // namespace kiln::tools
