// `kiln compile`: compile a .cu file for a named architecture, without a GPU, through the cache.

#include "arch_list.hpp"
#include "commands.hpp"
#include "compile_error.hpp"
#include "core/device_headers.hpp"
#include "miss_reason.hpp"
#include "output.hpp"
#include "source_file.hpp"

#include "kiln/cache/explain.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"
#include "kiln/raw_kernel.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

namespace kiln::tools {

namespace {

struct CompileArgs {
    std::string file;
    std::string arch;
    std::vector<std::string> name_expressions;
    std::vector<std::string> nvrtc_options;
    std::vector<std::string> link_inputs;
    std::string output;
    bool json = false;
};

// The program names the compiler gives NVRTC for @p source: the path of the cache's copy of the
// source, or `kiln_<key>.cu` without a disk cache (runtime/compiler.cpp).
std::vector<std::string> program_names(const std::string& source, CompileOptions options) {
    try {
        detail::add_cupy_headers(source, options); // as the RawModule that compiled it
        const cache::Key key = Compiler::global().key_for(source, options);
        std::vector<std::string> names{"kiln_" + key.hex() + ".cu"};
        if (auto* store = Compiler::global().store())
            names.insert(names.begin(), store->local().source_path(key).string());
        return names;
    } catch (const Error&) {
        return {};
    }
}

std::shared_ptr<const Program> compile_file(const CompileArgs& args, const std::string& source,
                                            const CompileOptions& options) {
    try {
        // Through a RawModule, so that this compile stores what a RawKernel of the same source
        // looks up: CuPy's headers where the source includes them, NVRTC's -minimal front end
        // where it fits, the options as given when that compile fails.
        return RawModule(source, options).compile();
    } catch (const NoDeviceError& e) {
        if (!args.arch.empty()) throw;
        throw NoDeviceError(std::string("no GPU to compile for: ") + e.what() +
                            ". To compile without one, name the architecture: `kiln compile " +
                            args.file + " --arch sm_90`");
    } catch (const CompileError& e) {
        throw compile_failure(e, program_names(source, options), args.file);
    }
}

void run_compile(const CompileArgs& args) {
    set_json_errors(args.json);
    const std::string source = read_user_file(args.file, "the CUDA file");

    CompileOptions options;
    options.arch = args.arch.empty() ? std::string() : parse_arch(args.arch);
    options.options = args.nvrtc_options;
    options.name_expressions = args.name_expressions;
    for (const auto& path : args.link_inputs)
        options.link_inputs.push_back(LinkInput::from_file(path));

    const auto start = std::chrono::steady_clock::now();
    auto program = compile_file(args, source, options);
    wait_for_remote_publishes();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const bool hit = program->origin() == ProgramOrigin::disk_cache;

    if (!args.output.empty()) {
        // A file the user named, outside the cache: a plain stream is fine here.
        std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
        out.write(program->cubin().data(), static_cast<std::streamsize>(program->cubin().size()));
        out.close();
        if (!out)
            throw Error("cannot write the cubin to '" + args.output +
                        "': check that its directory exists and is writable");
    }
    if (args.json) {
        nlohmann::json j;
        j["key"] = program->key().hex();
        j["cache"] = hit ? "hit" : "miss";
        // Why it missed: explained only here, after the compile, never on the compile's path.
        if (!hit) {
            auto* store = Compiler::global().store();
            j["why"] = store ? why_stored(cache::MissExplainer(store->local()), store->local(),
                                          program->key())
                             : nlohmann::json(nullptr);
        }
        j["ms"] = ms;
        // A hit that waited for another process's compile of the same key says how long.
        if (program->phases().wait_ms > 0) j["waited_ms"] = program->phases().wait_ms;
        j["cubin_bytes"] = program->cubin().size();
        j["arch"] = program->arch();
        j["nvrtc"] = nvrtc_version();
        j["options"] = program->options();
        nlohmann::json lowered = nlohmann::json::object();
        for (const auto& [name, mangled] : program->lowered_names())
            lowered[name] = mangled;
        j["lowered_names"] = lowered;
        j["log"] = program->log();
        if (program->source_path()) j["source_path"] = program->source_path()->string();
        std::printf("%s\n", json_text(j).c_str());
    } else {
        std::printf("%s %s %.2f ms\n", hit ? "hit" : "miss", program->key().hex().c_str(), ms);
        for (const auto& [name, mangled] : program->lowered_names())
            std::printf("  %s -> %s\n", name.c_str(), mangled.c_str());
    }
}

} // namespace

void add_compile_command(CLI::App& app) {
    auto args = std::make_shared<CompileArgs>();
    auto* cmd = app.add_subcommand(
        "compile", "Compile a CUDA file with NVRTC through the cache (no GPU needed).\n"
                   "Prints `hit|miss KEY MS ms`. NVRTC options follow `--`.");
    cmd->add_option("file", args->file, "CUDA source file")->required();
    cmd->add_option("--arch", args->arch,
                    "target architecture: sm_90, 90 or 9.0 (a cubin's; not compute_90)\n"
                    "(default: this GPU's)");
    // One value per occurrence, so `--name-expr E -- OPTIONS` leaves OPTIONS to NVRTC.
    cmd->add_option("--name-expr", args->name_expressions,
                    "a name expression to lower, e.g. 'scale<float>' (repeatable)")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_option("--link", args->link_inputs,
                    "device code to link into relocatable code (-dc): a .a, .cubin, .fatbin, "
                    ".ltoir or .ptx file (repeatable)")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    cmd->add_option("-o,--output", args->output, "also write the cubin to this file");
    cmd->add_flag(
        "--json", args->json,
        "print a JSON object instead of one line (errors too: {\"error\", \"kind\", ...})");
    cmd->add_option("nvrtc_options", args->nvrtc_options, "NVRTC options, after `--`");
    cmd->callback([args] { run_compile(*args); });
}

} // namespace kiln::tools
