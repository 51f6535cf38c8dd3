// The `kiln` command-line tool: offline compilation, the demo, cache upkeep.
//
// Exit statuses: 0 success (also --help, --version), 1 an error (the message says what to do;
// under --json also an object on stdout), 2 a usage error (a one-line hint to --help).

#include "commands.hpp"
#include "output.hpp"
#include "usage_hint.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/compiler.hpp"
#include "kiln/error.hpp"
#include "kiln/version.hpp"

#include <CLI/CLI.hpp>
#include <cuda.h>

#include <cstring>
#include <functional>
#include <iostream>
#include <string>

namespace {

// "kiln cache stats": the subcommands that were reached, for the usage hint.
std::string command_path(const CLI::App& app) {
    std::string path = app.get_name();
    const CLI::App* at = &app;
    for (;;) {
        const auto& used = at->get_subcommands();
        if (used.empty()) return path;
        at = used.back();
        path += " " + at->get_name();
    }
}

// `kiln --version`: what a bug report needs. The cache format decides which entries a build can
// read; the NVRTC in use (which may differ from the toolkit Kiln was built with) decides the keys.
std::string version_text() {
    return std::string("kiln ") + KILN_VERSION_STRING + "\ncache entry format " +
           std::to_string(kiln::cache::kEntryFormatVersion) + "\nbuilt against CUDA " +
           std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
           " (NVRTC), running NVRTC " + kiln::nvrtc_version();
}

int run(CLI::App& app, int argc, char** argv) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::Success& e) {
        return app.exit(e); // --help, --version: printed, status 0
    } catch (const CLI::RuntimeError& e) {
        return e.get_exit_code(); // a command that has printed why it failed
    } catch (const CLI::ParseError& e) {
        // CLI11 reports a word it does not know as a missing subcommand or an extra argument: name
        // the word, and the closest valid one.
        const std::string unknown = kiln::tools::unknown_word(app, argc, argv);
        std::cerr << "kiln: " << (unknown.empty() ? std::string(e.what()) : unknown) << "\nRun '"
                  << command_path(app) << " --help' for usage.\n";
        return 2;
    } catch (const kiln::Error& e) {
        return kiln::tools::report_error(e);
    } catch (const std::exception& e) {
        std::cerr << "kiln: unexpected error: " << e.what() << " (please report it)\n";
        return 1;
    }
    return 0;
}

} // namespace

// NOLINTNEXTLINE(bugprone-exception-escape): run() reports command errors; only setup can throw
int main(int argc, char** argv) {
    CLI::App app{"kiln: JIT CUDA kernels with a persistent kernel cache", "kiln"};
    app.set_version_flag("--version", std::function<std::string()>(version_text),
                         "print the version, the cache entry format and the NVRTC");
    app.require_subcommand(1);
    kiln::tools::add_compile_command(app);
    kiln::tools::add_demo_command(app);
    kiln::tools::add_warm_command(app);
    kiln::tools::add_cache_commands(app);
    kiln::tools::add_transfer_commands(app);
    kiln::tools::add_key_command(app);
    kiln::tools::add_help_command(app);
    // After the command line parsed (so --help works whatever the environment), before any
    // command runs; `kiln help` lists the variables, so it too works whatever their values.
    app.parse_complete_callback([&app] {
        if (!app.got_subcommand("help")) kiln::tools::check_environment();
    });

    int status = run(app, argc, argv);
    // Output that never arrived (a full disk, a closed pipe) is a failure like any other; a
    // command that failed already said why.
    if (const int error = kiln::tools::stdout_error(); error != 0 && status == 0) {
        std::cerr << "kiln: cannot write to standard output (" << std::strerror(error)
                  << "); check where it is redirected\n";
        status = 1;
    }
    return status;
}
