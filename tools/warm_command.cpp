// `kiln warm MANIFEST --arch sm_90[,sm_80...] [-j N] [--json]`: compile a manifest of kernels for
// named architectures, without a GPU, in parallel, into the cache (a CI step before the tests).
// With -j N > 1 the compiles run in N worker processes forked from this one (job_pool.hpp), each
// publishing into the same cache directory, so speed does not hang on how NVRTC scales with
// threads.
//
// The manifest (manifest.hpp has its grammar) lists CUDA source, inline or in a file, with NVRTC
// options and name expressions, and front ends' kernels: an ElementwiseKernel or ReductionKernel
// spec with the call that specializes it (dtypes, shapes, strides, axes), as describe_for gives
// it and a cache entry's recipe holds it. Each kernel is compiled once per --arch through
// Compiler::global(), so the same kernel compiled at run time (the same source and options, or
// the same front-end call on any GPU of that architecture) gets the same cache key and its first
// launch is a hit.
//
// A kernel that fails prints its CompileError once (later architectures add one line) and the
// command exits 1 after compiling the others; a bad manifest exits 1 before compiling anything.

#include "arch_list.hpp"
#include "commands.hpp"
#include "job_pool.hpp"
#include "manifest.hpp"
#include "miss_reason.hpp"
#include "output.hpp"
#include "progress.hpp"
#include "warm_from_cache.hpp"

#include "kiln/cache/explain.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace kiln::tools {

namespace {

struct WarmArgs {
    std::string manifest;
    std::string arches;
    unsigned jobs = 0;
    bool json = false;
    bool threads = false;
};

void run_warm(const WarmArgs& args) {
    set_json_errors(args.json);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<ManifestKernel> kernels = read_manifest(args.manifest);
    const std::vector<std::string> arches = parse_arch_list(args.arches);
    const std::size_t total = kernels.size() * arches.size();
    const unsigned workers =
        std::max(1u, std::min<unsigned>(args.jobs ? args.jobs : std::thread::hardware_concurrency(),
                                        static_cast<unsigned>(std::max<std::size_t>(total, 1))));
    const bool progress = progress_wanted(args.json);
    // --json explains each miss against the cache as it was before the run (read once, here, and
    // shared with the worker processes), not against the entries the run itself adds.
    std::optional<cache::MissExplainer> explainer;
    cache::Store* store = Compiler::global().store();
    if (args.json && store) explainer.emplace(store->local());

    const JobTotals done = run_jobs(
        total, workers, kernels.size(), progress, args.threads,
        [&](std::size_t job, JobOutput& output) {
            const std::size_t index = job / arches.size();
            const ManifestKernel& k = kernels[index];
            const std::string& arch = arches[job % arches.size()];
            try {
                auto program = k.compile(arch);
                if (program->origin() == ProgramOrigin::disk_cache) return JobOutcome::hit;
                if (explainer)
                    output.record(json_text(
                        {{"job", job},
                         {"kernel", k.label},
                         {"arch", arch},
                         {"key", program->key().hex()},
                         {"why", why_stored(*explainer, store->local(), program->key())}}));
                return JobOutcome::miss;
            } catch (const Error& e) {
                output.print(output.first_failure(index)
                                 ? k.label + " for " + arch + ": " + e.what() + "\n"
                                 : k.label + " also fails for " + arch + "\n");
                return JobOutcome::error;
            }
        },
        wait_for_remote_publishes);
    wait_for_remote_publishes(); // the remote tier's publishes are part of warming

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string arch_list;
    for (const auto& a : arches)
        arch_list += (arch_list.empty() ? "" : ",") + a;
    if (args.json) {
        nlohmann::json j{{"kernels", kernels.size()},
                         {"arches", arches},
                         {"hits", done.hits},
                         {"misses", done.misses},
                         {"errors", done.errors},
                         {"seconds", seconds},
                         {"jobs", workers},
                         {"worker_processes", done.processes},
                         // NVRTC compiles run (by this process or its workers): 0 when every
                         // kernel came from a cache tier (the local directory or the remote one).
                         {"compiles", done.compiles},
                         {"missed", missed_json(done.records)}};
        std::cout << json_text(j) << '\n';
        set_json_errors(false); // the summary counts the errors: one JSON document only
    } else {
        std::printf("warmed %zu kernels for %s: %zu hits, %zu misses, %zu errors in %.2f s\n",
                    kernels.size(), arch_list.c_str(), done.hits, done.misses, done.errors,
                    seconds);
    }
    if (done.errors) {
        throw Error(std::to_string(done.failed_slots) + " of " + std::to_string(kernels.size()) +
                    " kernel(s) failed to compile (" + std::to_string(done.errors) + " of " +
                    std::to_string(total) + " compiles); the others are cached");
    }
}

} // namespace

void add_warm_command(CLI::App& app) {
    auto args = std::make_shared<WarmArgs>();
    auto* cmd = app.add_subcommand(
        "warm", "Compile a manifest of kernels into the cache for named architectures (no GPU\n"
                "needed), in parallel; `kiln help warm` gives the manifest's schema");
    // The schema is this command's help only (`kiln warm --help`, `kiln help warm`).
    cmd->footer(
        "The manifest is JSON, a list of CUDA sources and front-end kernels:\n"
        "  {\"kernels\": [\n"
        "    {\"source\": \"extern \\\"C\\\" __global__ void k(...) {...}\"},\n"
        "    {\"file\": \"scale.cu\", \"options\": [\"-DN=4\"], \"name_expressions\": "
        "[\"scale<float>\"]},\n"
        "    {\"elementwise\": {\"name\": \"scale\", \"in_params\": \"T x, T a\", \"out_params\": "
        "\"T y\",\n"
        "                     \"operation\": \"y = x * a\"},\n"
        "     \"args\": [{\"dtype\": \"float32\", \"shape\": [1024]}, {\"dtype\": \"float32\", "
        "\"scalar\": true}]},\n"
        "    {\"reduction\": {\"name\": \"l2norm\", \"in_params\": \"T x\", \"out_params\": \"T "
        "y\",\n"
        "                   \"map_expr\": \"x * x\", \"reduce_expr\": \"a + b\",\n"
        "                   \"post_map_expr\": \"y = sqrt(a)\", \"identity\": \"0\"},\n"
        "     \"args\": [{\"dtype\": \"float32\", \"shape\": [4096, 4096]}], \"axis\": [1]}]}\n"
        "CUDA source: exactly one of \"source\" (inline) or \"file\" (relative to the manifest's\n"
        "directory); \"options\" and \"name_expressions\" are optional. A front-end kernel is an\n"
        "ElementwiseKernel or ReductionKernel spec and the call that specializes it: each\n"
        "argument's dtype, and a shape (\"strides\" in elements when not C-contiguous, \"offset\"\n"
        "the address modulo 16 bytes when not 0) or \"scalar\": true; \"size\" and \"block_size\"\n"
        "(elementwise), \"axis\" and \"keepdims\" (reduction) are optional. describe_for() gives\n"
        "this form for a call, and warming it gives the kernel that call compiles on any GPU of "
        "the\n"
        "architecture. Exits 1 if any kernel fails (after compiling the others) or the manifest "
        "is\n"
        "bad.\n"
        "With --from-cache DIR instead of a manifest, the kernels are the recipes that DIR's\n"
        "entries hold (what an application run compiled), compiled again for --arch.\n"
        "--arch takes sm_90, 90 or 9.0 (also sm_90a, sm_100f): a cubin's architecture, never a\n"
        "virtual compute_90.");
    auto* manifest = cmd->add_option("manifest", args->manifest, "JSON manifest");
    cmd->add_option("--arch", args->arches, "architectures, comma-separated: sm_90,sm_80")
        ->required();
    cmd->add_option("-j,--jobs", args->jobs,
                    "parallel compiles, each in a worker process (default: the number of cores)");
    cmd->add_flag("--json", args->json, "print a JSON summary");
    cmd->add_flag("--threads", args->threads,
                  "run the parallel compiles in threads of this process, not worker processes");
    // `--from-cache DIR` instead of a manifest: warm_from_cache.cpp.
    auto from_cache = std::make_shared<std::string>();
    cmd->add_option("--from-cache", *from_cache,
                    "instead of a manifest: compile the recipe of every entry in this cache\n"
                    "directory (e.g. one an application run filled) into the current cache")
        ->excludes(manifest);
    cmd->callback([args, from_cache] {
        if (!from_cache->empty())
            return run_warm_from_cache(
                {*from_cache, args->arches, args->jobs, args->json, args->threads});
        if (args->manifest.empty()) // a usage error, like any missing argument: exit 2
            throw CLI::RequiredError("a MANIFEST or --from-cache DIR");
        run_warm(*args);
    });
}

} // namespace kiln::tools
