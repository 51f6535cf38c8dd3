// `kiln export FILE` / `kiln import FILE`: carry a kernel cache between machines or CI runs as one
// file (the archive format is documented in cache/archive.cpp).

#include "commands.hpp"
#include "format_size.hpp"

#include "kiln/cache/store.hpp"

#include <cstdio>
#include <memory>
#include <string>

namespace kiln::tools {

void add_transfer_commands(CLI::App& app) {
    auto export_file = std::make_shared<std::string>();
    auto* export_cmd =
        app.add_subcommand("export", "Write every verified cache entry (and saved source) to FILE");
    export_cmd->add_option("file", *export_file, "archive to write (replaced atomically)")
        ->required();
    export_cmd->callback([export_file] {
        cache::Store store(cache::Config::from_environment());
        const auto result = store.export_to(*export_file);
        std::printf("exported %llu entries (%llu sources, %s) to %s\n",
                    static_cast<unsigned long long>(result.entries),
                    static_cast<unsigned long long>(result.sources),
                    format_size(result.bytes).c_str(), export_file->c_str());
        if (result.skipped)
            std::printf("left out %llu damaged entries\n",
                        static_cast<unsigned long long>(result.skipped));
    });

    auto import_file = std::make_shared<std::string>();
    auto* import_cmd = app.add_subcommand(
        "import", "Verify and publish the entries of an archive made by `kiln export`");
    import_cmd->add_option("file", *import_file, "archive to read")->required();
    import_cmd->callback([import_file] {
        cache::Store store(cache::Config::from_environment());
        const auto result = store.import_from(*import_file);
        std::printf("imported %llu entries (%llu sources, %s) into %s\n",
                    static_cast<unsigned long long>(result.entries),
                    static_cast<unsigned long long>(result.sources),
                    format_size(result.bytes).c_str(), store.config().dir.c_str());
    });
}

} // namespace kiln::tools
