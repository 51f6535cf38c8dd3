// The `kiln` command-line tool: offline compilation, the demo, cache upkeep.

#include "commands.hpp"

#include "kiln/error.hpp"
#include "kiln/version.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

int main(int argc, char** argv) {
    CLI::App app{"kiln: JIT CUDA kernels with a persistent kernel cache", "kiln"};
    app.set_version_flag("--version", std::string("kiln ") + KILN_VERSION_STRING);
    app.require_subcommand(1);
    kiln::tools::add_compile_command(app);
    kiln::tools::add_demo_command(app);
    kiln::tools::add_warm_command(app);
    kiln::tools::add_cache_commands(app);
    kiln::tools::add_transfer_commands(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const kiln::CompileError& e) {
        std::cerr << "kiln: " << e.what() << '\n';
        return 1;
    } catch (const kiln::Error& e) {
        std::cerr << "kiln: " << e.what() << '\n';
        return 1;
    } catch (const std::exception& e) {
        std::cerr << "kiln: unexpected error: " << e.what() << '\n';
        return 2;
    }
    return 0;
}
