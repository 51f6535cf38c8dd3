// `kiln warm --from-cache DIR --arch sm_80,sm_90 [-j N] [--json]`: every kernel an application run
// left in DIR, compiled again from the recipe its entry holds for other architectures, with no GPU
// and no application, into the current cache (KILN_CACHE_DIR; DIR may be the same directory).
//
// Each recipe is compiled through Compiler::global() with options_from_recipe() and the link inputs
// the entry recorded (relocatable device code), so the key is the
// one the application asks for on that architecture (with this Kiln and this NVRTC) and its first
// launch there is a hit. Entries that hold the same recipe for several architectures are compiled
// once per target. Entries without a recipe (written by a Kiln of entry format 1) are counted and
// skipped: their source is not in them. DIR is only read, never changed.

#include "warm_from_cache.hpp"

#include "arch_list.hpp"
#include "cache_access.hpp"
#include "commands.hpp"
#include "job_pool.hpp"
#include "miss_reason.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "recipe_policy.hpp"

#include "kiln/cache/explain.hpp"
#include "kiln/cache/local_store.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace kiln::tools {

namespace {

// One recipe found in DIR, and which entry it came from (for messages).
struct Source {
    std::string label; // "entry 0123abcd (scale)"
    cache::Recipe recipe;
    std::vector<LinkInput> link_inputs; // relocatable device code: what the entry linked
    CompileOptions options_for(const std::string& arch) const {
        CompileOptions options = options_from_recipe(recipe, arch);
        options.link_inputs = link_inputs;
        return options;
    }
};

// One compile to run: a recipe for an architecture, once per target key.
struct Job {
    std::size_t source = 0;
    std::string arch;
};

// Identifies a recipe and its link inputs: the same one found in entries for several architectures
// is one kernel.
cache::Key identity_of(const cache::Recipe& recipe, const std::vector<LinkInput>& link_inputs) {
    cache::KeyBuilder key;
    key.add("source", recipe.source);
    for (const auto& option : recipe.options)
        key.add("option", option);
    for (const auto& [name, content] : recipe.headers)
        key.add("header-name", name).add("header", content);
    for (const auto& name : recipe.name_expressions)
        key.add("name-expression", name);
    key.add("flags", std::uint64_t{recipe.cuda_headers} | std::uint64_t{recipe.lineinfo} << 1);
    for (const auto& input : link_inputs)
        key.add("link-input", input.bytes);
    return key.finish();
}

std::string label_of(const cache::Key& key, const std::vector<std::string>& kernels) {
    std::string label = "entry " + key.hex().substr(0, 12);
    if (!kernels.empty()) label += " (" + kernels.front() + ")";
    return label;
}

} // namespace

void run_warm_from_cache(const WarmFromCacheArgs& args) {
    set_json_errors(args.json);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> arches = parse_arch_list(args.arches);
    require_writable(cache_config(), "kiln warm --from-cache");

    struct stat st;
    if (::stat(args.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw ArgumentError("--from-cache '" + args.dir +
                            "': no such cache directory (give the KILN_CACHE_DIR an application "
                            "run used)");
    cache::Config from_config;
    from_config.dir = args.dir;
    from_config.readonly = true; // only read: nothing there is created, counted or touched
    // With trusted keys, only DIR's own compiles (a private directory) or signed entries.
    from_config.trusted_keys = cache_config().trusted_keys;
    cache::LocalStore from(from_config);
    check_cache_dir(from, !args.json);

    // Every recipe in DIR; peek() verifies each entry whole.
    std::vector<Source> sources;
    std::map<cache::Key, std::size_t> recipes; // identity -> index in sources
    std::size_t entries = 0, without_recipe = 0, unreadable = 0, refused = 0, untrusted = 0;
    auto infos = from.list();
    std::sort(infos.begin(), infos.end(),
              [](const auto& a, const auto& b) { return a.key < b.key; });
    for (const auto& info : infos) {
        ++entries;
        std::string why_not;
        auto entry = from.peek(info.key, &why_not);
        if (!entry && why_not.rfind("untrusted", 0) == 0) {
            ++untrusted;
            continue;
        }
        if (!entry) {
            ++unreadable; // damaged or evicted since the listing
            continue;
        }
        if (!entry->recipe) {
            ++without_recipe;
            continue;
        }
        if (std::string why = recipe_refusal(*entry->recipe); !why.empty()) {
            ++refused;
            std::fprintf(stderr, "kiln: %s: %s\n", label_of(info.key, info.kernel_names).c_str(),
                         why.c_str());
            continue;
        }
        std::vector<LinkInput> link_inputs;
        try {
            link_inputs = link_inputs_from_entry(entry->link_inputs);
        } catch (const Error& e) {
            ++refused;
            std::fprintf(stderr, "kiln: %s: %s\n", label_of(info.key, info.kernel_names).c_str(),
                         e.what());
            continue;
        }
        if (recipes.emplace(identity_of(*entry->recipe, link_inputs), sources.size()).second)
            sources.push_back({label_of(info.key, info.kernel_names), std::move(*entry->recipe),
                               std::move(link_inputs)});
    }

    // One job per target key (two recipes that differ only in the description or program name
    // are one kernel).
    Compiler& compiler = Compiler::global();
    std::vector<Job> jobs;
    std::map<cache::Key, std::size_t> seen;
    std::size_t errors_before = refused;
    std::vector<std::string> early_errors;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        for (const auto& arch : arches) {
            try {
                const cache::Key key =
                    compiler.key_for(sources[i].recipe.source, sources[i].options_for(arch));
                if (seen.emplace(key, jobs.size()).second) jobs.push_back({i, arch});
            } catch (const Error& e) {
                ++errors_before;
                early_errors.push_back(sources[i].label + " for " + arch + ": " + e.what());
            }
        }
    }
    for (const auto& message : early_errors)
        std::fprintf(stderr, "%s\n", message.c_str());

    const std::size_t total = jobs.size();
    const unsigned workers =
        std::max(1u, std::min<unsigned>(args.jobs ? args.jobs : std::thread::hardware_concurrency(),
                                        static_cast<unsigned>(std::max<std::size_t>(total, 1))));
    const bool progress = progress_wanted(args.json);
    // --json explains each miss against the current cache as it was before the run.
    std::optional<cache::MissExplainer> explainer;
    cache::Store* store = compiler.store();
    if (args.json && store) explainer.emplace(store->local());
    const JobTotals done = run_jobs(
        total, workers, 0, progress, args.threads,
        [&](std::size_t index, JobOutput& output) {
            const Job& job = jobs[index];
            const Source& source = sources[job.source];
            try {
                auto program = compiler.compile(source.recipe.source, source.options_for(job.arch));
                if (program->origin() == ProgramOrigin::disk_cache) return JobOutcome::hit;
                if (explainer)
                    output.record(json_text(
                        {{"job", index},
                         {"kernel", source.label},
                         {"arch", job.arch},
                         {"key", program->key().hex()},
                         {"why", why_stored(*explainer, store->local(), program->key())}}));
                return JobOutcome::miss;
            } catch (const Error& e) {
                output.print(source.label + " for " + job.arch + ": " + e.what() + "\n");
                return JobOutcome::error;
            }
        },
        wait_for_remote_publishes);
    const std::size_t hits = done.hits, misses = done.misses, errors = errors_before + done.errors;

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string arch_list;
    for (const auto& a : arches)
        arch_list += (arch_list.empty() ? "" : ",") + a;
    if (args.json) {
        std::cout << json_text(nlohmann::json{{"from", args.dir},
                                              {"entries", entries},
                                              {"kernels", sources.size()},
                                              {"without_recipe", without_recipe},
                                              {"unreadable", unreadable},
                                              {"untrusted", untrusted},
                                              {"arches", arches},
                                              {"compiles", total},
                                              {"hits", hits},
                                              {"misses", misses},
                                              {"errors", errors},
                                              {"seconds", seconds},
                                              {"jobs", workers},
                                              {"missed", missed_json(done.records)}})
                  << '\n';
        set_json_errors(false); // the summary counts the errors: one JSON document only
    } else {
        std::printf("warmed %zu kernels from %s for %s: %zu hits, %zu misses, %zu errors in "
                    "%.2f s\n",
                    sources.size(), args.dir.c_str(), arch_list.c_str(), hits, misses, errors,
                    seconds);
        if (without_recipe)
            std::printf("skipped %zu entries without a recipe (written before entry format 2: "
                        "run the application again to record one)\n",
                        without_recipe);
        if (unreadable)
            std::printf("skipped %zu damaged entries (`kiln cache verify` tells which)\n",
                        unreadable);
        if (untrusted)
            std::printf("skipped %zu entries no key in KILN_TRUSTED_KEYS signed\n", untrusted);
    }
    if (errors)
        throw Error(std::to_string(errors) + " of " + std::to_string(total + errors_before) +
                    " compiles failed or were refused (a recipe may use features of its own "
                    "architecture only); the others are cached");
}

} // namespace kiln::tools
