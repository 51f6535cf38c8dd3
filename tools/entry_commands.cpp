// `kiln cache ls` and `kiln cache show`: the entries of the kernel cache, one line each or one in
// full, with the recipe that produced it (entry format 2) and its link inputs.

#include "cache_access.hpp"
#include "commands.hpp"
#include "format_size.hpp"
#include "output.hpp"

#include "kiln/cache/local_store.hpp"
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
    cache::LocalStore store(cache_config());
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
                               {"source", info.has_source},
                               {"format_version", info.format_version},
                               {"recipe", info.has_recipe}});
        }
        // An array as before; shard problems went to stderr.
        print_json(entries);
        return;
    }
    for (const auto& info : infos) {
        // An entry of an older format is never looked up again: say so, `kiln cache prune`
        // removes it once it is the least recently used.
        std::printf("%s  %10s  %s  %-8s %3zu kernel%s  nvrtc %-9s %s%s%s\n", info.key.hex().c_str(),
                    format_size(info.size).c_str(), local_time(info.mtime).c_str(),
                    info.arch.c_str(), info.kernel_count, info.kernel_count == 1 ? " " : "s",
                    info.nvrtc_version.c_str(), kernels_summary(info).c_str(),
                    info.has_source ? "  +source" : "",
                    info.format_version < cache::kEntryFormatVersion ? "  (old format)" : "");
    }
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

nlohmann::json recipe_json(const cache::Recipe& recipe) {
    nlohmann::json headers = nlohmann::json::array();
    for (const auto& [name, content] : recipe.headers)
        headers.push_back({{"name", name}, {"size", content.size()}});
    // The description is the front end's JSON: nested as such when it parses, else a string.
    nlohmann::json description = recipe.description;
    if (!recipe.description.empty()) {
        auto parsed = nlohmann::json::parse(recipe.description, nullptr, false);
        if (!parsed.is_discarded()) description = std::move(parsed);
    }
    return {{"program_name", recipe.program_name},
            {"source_size", recipe.source.size()},
            {"options", recipe.options},
            {"headers", headers},
            {"name_expressions", recipe.name_expressions},
            {"cuda_headers", recipe.cuda_headers},
            {"lineinfo", recipe.lineinfo},
            {"description", description}};
}

nlohmann::json link_inputs_json(const std::vector<cache::LinkInput>& inputs) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& input : inputs) {
        nlohmann::json item{{"kind", cache::to_string(input.kind)}, {"name", input.name}};
        if (input.key)
            item["key"] = input.key->hex();
        else
            item["size"] = input.bytes.size();
        list.push_back(std::move(item));
    }
    return list;
}

void print_entry_json(cache::LocalStore& store, const cache::Entry& entry,
                      const std::optional<std::string>& source) {
    nlohmann::json lowered = nlohmann::json::object();
    for (const auto& [expression, name] : entry.lowered_names)
        lowered[expression] = name;
    print_json({{"key", entry.key.hex()},
                {"format_version", entry.format_version},
                {"arch", entry.arch},
                {"nvrtc_version", entry.nvrtc_version},
                {"payload", entry.kind == cache::PayloadKind::cubin ? "cubin" : "ptx"},
                {"payload_size", entry.payload.size()},
                {"compile_ms", entry.compile_ms},
                {"source_path", source ? nlohmann::json(store.source_path(entry.key).string())
                                       : nlohmann::json(nullptr)},
                {"lowered_names", lowered},
                {"kernel_names", entry.kernel_names},
                {"recipe", entry.recipe ? recipe_json(*entry.recipe) : nlohmann::json(nullptr)},
                {"link_inputs", link_inputs_json(entry.link_inputs)},
                {"log", entry.log}});
}

std::string joined(const std::vector<std::string>& items) {
    std::string text;
    for (const auto& item : items)
        text += (text.empty() ? "" : " ") + item;
    return text.empty() ? "none" : text;
}

void print_recipe(const cache::Key& key, const cache::Entry& entry) {
    if (!entry.recipe) {
        std::printf("recipe        none (%s)\n", entry.format_version < 2
                                                     ? "written before entry format 2"
                                                     : "its writer kept none");
        return;
    }
    const cache::Recipe& recipe = *entry.recipe;
    std::printf("recipe\n");
    std::printf("  program     %s\n", recipe.program_name.c_str());
    std::printf("  source      %zu bytes (kiln cache show %s --source)\n", recipe.source.size(),
                key.hex().substr(0, 12).c_str());
    std::printf("  options     %s\n", joined(recipe.options).c_str());
    std::printf("  headers     %zu\n", recipe.headers.size());
    for (const auto& [name, content] : recipe.headers)
        std::printf("    %s (%zu bytes)\n", name.c_str(), content.size());
    std::printf("  expressions %s\n", joined(recipe.name_expressions).c_str());
    std::printf("  toolkit     %s\n", recipe.cuda_headers ? "headers includable" : "not included");
    std::printf("  lineinfo    %s\n", recipe.lineinfo ? "on" : "off");
    if (!recipe.description.empty()) std::printf("  description %s\n", recipe.description.c_str());
}

void run_show(const ShowArgs& args) {
    set_json_errors(args.json);
    cache::LocalStore store(cache_config());
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
        // The recipe's source is the one the entry was compiled from; older entries have only
        // the saved `.cu`, if any.
        if (entry->recipe) return write_stdout(entry->recipe->source, "source");
        if (!source)
            throw Error("no source for " + key.hex() +
                        ": the entry holds no recipe (written before entry format 2) and no "
                        "source was saved beside it (KILN_CACHE_SAVE_SOURCE=1 saves them)");
        return write_stdout(*source, "source");
    }
    if (args.json) return print_entry_json(store, *entry, source);
    std::printf("key           %s\n", key.hex().c_str());
    std::printf("format        %u%s\n", entry->format_version,
                entry->format_version < cache::kEntryFormatVersion
                    ? " (old: programs no longer look it up; `kiln cache prune` removes it)"
                    : "");
    std::printf("arch          %s\n", entry->arch.c_str());
    std::printf("nvrtc         %s\n", entry->nvrtc_version.c_str());
    std::printf("payload       %s, %zu bytes\n",
                entry->kind == cache::PayloadKind::cubin ? "cubin" : "ptx", entry->payload.size());
    std::printf("compile time  %.1f ms\n", entry->compile_ms);
    std::printf("source        %s\n", source ? store.source_path(key).c_str() : "not saved");
    std::printf("names         %zu\n", entry->lowered_names.size());
    for (const auto& [expression, lowered] : entry->lowered_names)
        std::printf("  %s -> %s\n", expression.c_str(), lowered.c_str());
    if (entry->format_version >= 2) {
        std::printf("kernels       %zu\n", entry->kernel_names.size());
        for (const auto& name : entry->kernel_names)
            std::printf("  %s\n", display_name(name).c_str());
    }
    print_recipe(key, *entry);
    if (!entry->link_inputs.empty()) {
        std::printf("link inputs   %zu\n", entry->link_inputs.size());
        for (const auto& input : entry->link_inputs) {
            if (input.key)
                std::printf("  %-7s %s (entry %s)\n", cache::to_string(input.kind),
                            input.name.c_str(), input.key->hex().c_str());
            else
                std::printf("  %-7s %s (%zu bytes)\n", cache::to_string(input.kind),
                            input.name.c_str(), input.bytes.size());
        }
    }
    if (!entry->log.empty()) std::printf("log\n%s\n", entry->log.c_str());
}

} // namespace

void add_entry_commands(CLI::App& cache_cmd) {
    auto ls_json = std::make_shared<bool>(false);
    auto* ls = cache_cmd.add_subcommand(
        "ls", "List entries, most recently used first: key, size, last use, architecture,\n"
              "kernels (the first one's name, +N more), NVRTC version; entries of an older\n"
              "format (never looked up again) are marked");
    ls->add_flag("--json", *ls_json, "print a JSON array");
    ls->callback([ls_json] { run_ls(*ls_json); });

    auto show_args = std::make_shared<ShowArgs>();
    auto* show = cache_cmd.add_subcommand(
        "show", "Show one entry (metadata, kernels, the recipe that produced it, link inputs),\n"
                "or its source, cubin or log");
    show->add_option("key", show_args->key, "the entry's key (32 hex digits, or a unique prefix)")
        ->required();
    auto* source = show->add_flag("--source", show_args->source,
                                  "print the CUDA source: the recipe's, else the saved one");
    auto* cubin = show->add_flag("--cubin", show_args->cubin, "write the raw cubin to stdout");
    auto* log = show->add_flag("--log", show_args->log, "print NVRTC's log");
    auto* json = show->add_flag("--json", show_args->json, "print the entry as a JSON object");
    source->excludes(cubin)->excludes(log)->excludes(json);
    cubin->excludes(log)->excludes(json);
    log->excludes(json);
    show->callback([show_args] { run_show(*show_args); });
}

} // namespace kiln::tools
