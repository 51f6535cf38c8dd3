// `kiln cache explain FILE|KEY [--json]`: why a key is not found in the cache, as `kiln compile
// --json` says for a miss: the nearest entry of the same kernel and the key fields that differ
// (kiln/cache/explain.hpp). KEY names an entry of the cache (the nearest is then another entry);
// FILE an entry file from elsewhere (another machine's cache, `<key>.kiln`), explained against
// this cache.

#include "cache_access.hpp"
#include "commands.hpp"
#include "miss_reason.hpp"
#include "output.hpp"
#include "source_file.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/cache/explain.hpp"
#include "kiln/cache/local_store.hpp"
#include "kiln/error.hpp"

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>

namespace kiln::tools {

namespace {

struct ExplainArgs {
    std::string what;
    bool json = false;
};

// The entry in the file @p path, named `<key>.kiln` as in a cache directory, verified.
cache::Entry read_entry_file(const std::string& path) {
    const std::string stem = std::filesystem::path(path).stem().string();
    const auto key = cache::Key::from_hex(stem);
    if (!key)
        throw ArgumentError("'" + path +
                            "' is not named after a key: an entry file is <key>.kiln, as in a "
                            "cache directory");
    // As any file a user names, bounded by the largest entry the format allows.
    const std::string bytes = read_user_file(path, "the entry file",
                                             cache::kEntryHeaderSize + cache::kMaxMetadataSize +
                                                 cache::kMaxPayloadSize + cache::kEntrySealSize);
    cache::DecodeResult decoded = cache::decode_entry(bytes, *key);
    if (!decoded.entry)
        throw Error("'" + path + "' is not a good cache entry (" + to_string(decoded.error) + ")");
    return std::move(*decoded.entry);
}

void run_explain(const ExplainArgs& args) {
    set_json_errors(args.json);
    cache::LocalStore store(cache_config());
    check_cache_dir(store, !args.json);
    struct stat st;
    cache::Entry entry;
    if (::stat(args.what.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        entry = read_entry_file(args.what);
    } else {
        const cache::Key key = resolve_key(store, args.what);
        std::string why;
        auto found = store.peek(key, &why);
        if (!found)
            throw Error("entry " + key.hex() + " in " + store.config().dir.string() + ": " + why +
                        " (give the entry's file to explain a key from elsewhere)");
        entry = std::move(*found);
    }
    const cache::MissReason why = cache::MissExplainer(store).explain(entry);
    if (args.json) {
        print_json({{"key", entry.key.hex()}, {"why", why_json(why)}});
        return;
    }
    std::printf("%s: %s\n", entry.key.hex().c_str(), why_text(why).c_str());
}

} // namespace

void add_explain_command(CLI::App& cache_cmd) {
    auto args = std::make_shared<ExplainArgs>();
    auto* cmd = cache_cmd.add_subcommand(
        "explain",
        "Say why a key misses: the nearest other entry of the same kernel (same front-end spec\n"
        "name, or a kernel of the same name) and which key fields differ from it: source,\n"
        "options, headers, arch, nvrtc, format (an older Kiln's entry) or kiln (the same inputs\n"
        "keyed otherwise by another Kiln). Reads every entry's metadata: a second or so for\n"
        "10,000 entries.");
    cmd->add_option("entry", args->what,
                    "an entry file (<key>.kiln, e.g. from another machine's cache), or the key of\n"
                    "an entry in this cache (32 hex digits, or a unique prefix)")
        ->required();
    cmd->add_flag("--json", args->json,
                  "print {\"key\", \"why\": {\"nearest\": KEY or null, \"differs\": [...]}}");
    cmd->callback([args] { run_explain(*args); });
}

} // namespace kiln::tools
