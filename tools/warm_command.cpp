// `kiln warm MANIFEST --arch sm_90[,sm_80...] [-j N] [--json]`: compile a manifest of kernels for
// named architectures, without a GPU, in parallel, into the cache (a CI step before the tests).
//
// Manifest (JSON):
//   {"kernels": [
//      {"source": "extern \"C\" __global__ void k(...) {...}"},
//      {"file": "kernels/scale.cu", "options": ["-DN=4"], "name_expressions": ["scale<float>"]}
//   ]}
// Each kernel has exactly one of "source" (inline CUDA) or "file" (a path, relative paths taken
// from the manifest's directory); "options" (NVRTC options after Kiln's defaults) and
// "name_expressions" (C++ names to lower, e.g. template instances) are optional lists of strings.
// Any other field is an error: front-end specs (ElementwiseKernel, ...) are not manifest entries
// yet. Each kernel is compiled once per --arch, through Compiler::global(), so the same kernel
// compiled at run time with the same options gets the same cache key and its first launch is a hit.
//
// A kernel that fails prints its CompileError once (later architectures add one line) and the
// command exits 1 after compiling the others; a bad manifest exits 1 before compiling anything.

#include "commands.hpp"
#include "output.hpp"
#include "source_file.hpp"
#include "warm_from_cache.hpp"

#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

namespace kiln::tools {

namespace {

struct WarmArgs {
    std::string manifest;
    std::string arches;
    unsigned jobs = 0;
    bool json = false;
};

struct Kernel {
    std::string label; // for messages: "kernel 3 (scale.cu)"
    std::string source;
    std::vector<std::string> options, name_expressions;
};

std::vector<std::string> string_list(const nlohmann::json& entry, const char* field,
                                     const std::string& label) {
    if (!entry.contains(field)) return {};
    const auto& value = entry.at(field);
    if (!value.is_array())
        throw ArgumentError(label + ": \"" + field + "\" must be a list of strings");
    std::vector<std::string> out;
    for (const auto& item : value) {
        if (!item.is_string())
            throw ArgumentError(label + ": \"" + field + "\" must be a list of strings");
        out.push_back(item.get<std::string>());
    }
    return out;
}

std::vector<Kernel> read_manifest(const std::string& path) {
    const std::string text = read_user_file(path, "manifest");
    nlohmann::json manifest;
    try {
        manifest = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        throw ArgumentError("manifest '" + path + "' is not JSON: " + e.what());
    }
    if (!manifest.is_object() || !manifest.contains("kernels") || !manifest["kernels"].is_array())
        throw ArgumentError("manifest '" + path + "' needs a \"kernels\" list");
    const auto base = std::filesystem::path(path).parent_path();
    std::vector<Kernel> kernels;
    std::size_t index = 0;
    for (const auto& entry : manifest["kernels"]) {
        Kernel k;
        k.label = "kernel " + std::to_string(index++);
        if (!entry.is_object()) throw ArgumentError(k.label + " is not an object");
        for (const auto& field : entry.items())
            if (field.key() != "source" && field.key() != "file" && field.key() != "options" &&
                field.key() != "name_expressions")
                throw ArgumentError(k.label + ": unknown field \"" + field.key() +
                                    "\" (known: source, file, options, name_expressions; "
                                    "front-end specs are not supported in manifests yet)");
        const bool has_source = entry.contains("source"), has_file = entry.contains("file");
        if (has_source == has_file)
            throw ArgumentError(k.label + " needs exactly one of \"source\" or \"file\" (front-end "
                                          "specs are not supported in manifests yet)");
        if (has_source) {
            if (!entry["source"].is_string())
                throw ArgumentError(k.label + ": \"source\" must be a string");
            k.source = entry["source"].get<std::string>();
        } else {
            if (!entry["file"].is_string())
                throw ArgumentError(k.label + ": \"file\" must be a string");
            const std::filesystem::path file = entry["file"].get<std::string>();
            k.label += " (" + file.string() + ")";
            k.source =
                read_user_file(file.is_absolute() ? file : base / file, "the file of " + k.label);
        }
        k.options = string_list(entry, "options", k.label);
        k.name_expressions = string_list(entry, "name_expressions", k.label);
        kernels.push_back(std::move(k));
    }
    return kernels;
}

std::vector<std::string> split_arches(const std::string& text) {
    std::vector<std::string> arches;
    std::stringstream in(text);
    std::string arch;
    while (std::getline(in, arch, ','))
        if (!arch.empty()) arches.push_back(normalize_arch(arch));
    if (arches.empty()) throw ArgumentError("--arch needs at least one architecture, e.g. sm_90");
    return arches;
}

void run_warm(const WarmArgs& args) {
    set_json_errors(args.json);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<Kernel> kernels = read_manifest(args.manifest);
    const std::vector<std::string> arches = split_arches(args.arches);
    const std::size_t total = kernels.size() * arches.size();
    const unsigned workers =
        std::max(1u, std::min<unsigned>(args.jobs ? args.jobs : std::thread::hardware_concurrency(),
                                        static_cast<unsigned>(std::max<std::size_t>(total, 1))));
    const bool progress = !args.json && isatty(STDERR_FILENO);

    std::atomic<std::size_t> next{0}, hits{0}, misses{0}, errors{0};
    std::mutex output;                        // guards stderr and failed
    std::vector<bool> failed(kernels.size()); // a kernel's full error is printed once
    auto report = [&] {
        if (!progress) return;
        std::fprintf(stderr, "\r[%zu/%zu] hits %zu misses %zu errors %zu", hits + misses + errors,
                     total, hits.load(), misses.load(), errors.load());
    };
    auto work = [&] {
        for (std::size_t job; (job = next++) < total;) {
            const std::size_t index = job / arches.size();
            const Kernel& k = kernels[index];
            CompileOptions options = CompileOptions::for_arch(arches[job % arches.size()]);
            options.options = k.options;
            options.name_expressions = k.name_expressions;
            try {
                auto program = Compiler::global().compile(k.source, options);
                (program->origin() == ProgramOrigin::disk_cache ? hits : misses)++;
            } catch (const Error& e) {
                errors++;
                std::lock_guard<std::mutex> lock(output);
                if (failed[index])
                    std::fprintf(stderr, "%s%s also fails for %s\n", progress ? "\n" : "",
                                 k.label.c_str(), options.arch.c_str());
                else
                    std::fprintf(stderr, "%s%s for %s: %s\n", progress ? "\n" : "", k.label.c_str(),
                                 options.arch.c_str(), e.what());
                failed[index] = true;
            }
            std::lock_guard<std::mutex> lock(output);
            report();
        }
    };
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < workers; ++t)
        threads.emplace_back(work);
    work();
    for (auto& thread : threads)
        thread.join();
    if (progress) std::fprintf(stderr, "\n");

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::string arch_list;
    for (const auto& a : arches)
        arch_list += (arch_list.empty() ? "" : ",") + a;
    if (args.json) {
        nlohmann::json j{{"kernels", kernels.size()},
                         {"arches", arches},
                         {"hits", hits.load()},
                         {"misses", misses.load()},
                         {"errors", errors.load()},
                         {"seconds", seconds},
                         {"jobs", workers}};
        std::cout << j.dump() << '\n';
        set_json_errors(false); // the summary counts the errors: one JSON document only
    } else {
        std::printf("warmed %zu kernels for %s: %zu hits, %zu misses, %zu errors in %.2f s\n",
                    kernels.size(), arch_list.c_str(), hits.load(), misses.load(), errors.load(),
                    seconds);
    }
    if (errors) {
        const auto count = static_cast<std::size_t>(std::count(failed.begin(), failed.end(), true));
        throw Error(std::to_string(count) + " of " + std::to_string(kernels.size()) +
                    " kernel(s) failed to compile (" + std::to_string(errors.load()) + " of " +
                    std::to_string(total) + " compiles); the others are cached");
    }
}

} // namespace

void add_warm_command(CLI::App& app) {
    auto args = std::make_shared<WarmArgs>();
    auto* cmd = app.add_subcommand(
        "warm",
        "Compile a manifest of kernels into the cache for named architectures (no GPU needed),\n"
        "in parallel. The manifest is JSON:\n"
        "  {\"kernels\": [{\"source\": \"extern \\\"C\\\" __global__ void k(...) {...}\"},\n"
        "               {\"file\": \"scale.cu\", \"options\": [\"-DN=4\"],\n"
        "                \"name_expressions\": [\"scale<float>\"]}]}\n"
        "Each kernel has exactly one of \"source\" (inline CUDA) or \"file\" (relative to the\n"
        "manifest's directory); \"options\" and \"name_expressions\" are optional. Exits 1 if any\n"
        "kernel fails (after compiling the others) or the manifest is bad.\n"
        "With --from-cache DIR instead of a manifest, the kernels are the recipes that DIR's\n"
        "entries hold (what an application run compiled), compiled again for --arch.");
    auto* manifest = cmd->add_option("manifest", args->manifest, "JSON manifest");
    cmd->add_option("--arch", args->arches, "architectures, comma-separated: sm_90,sm_80")
        ->required();
    cmd->add_option("-j,--jobs", args->jobs, "parallel compiles (default: the number of cores)");
    cmd->add_flag("--json", args->json, "print a JSON summary");
    // `--from-cache DIR` instead of a manifest: warm_from_cache.cpp.
    auto from_cache = std::make_shared<std::string>();
    cmd->add_option("--from-cache", *from_cache,
                    "instead of a manifest: compile the recipe of every entry in this cache\n"
                    "directory (e.g. one an application run filled) into the current cache")
        ->excludes(manifest);
    cmd->callback([args, from_cache] {
        if (!from_cache->empty())
            return run_warm_from_cache({*from_cache, args->arches, args->jobs, args->json});
        if (args->manifest.empty()) // a usage error, like any missing argument: exit 2
            throw CLI::RequiredError("a MANIFEST or --from-cache DIR");
        run_warm(*args);
    });
}

} // namespace kiln::tools
