// `kiln help environment [--markdown]`: every KILN_* variable, from the one table that defines them
// (kiln/settings.hpp), as text for a terminal or as the Markdown page docs/environment.md. `kiln
// help` alone prints the general help. Neither checks the environment first: the list is what to
// read when a variable does not parse.

#include "commands.hpp"

#include "kiln/settings.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>

namespace kiln::tools {

namespace {

struct HelpArgs {
    bool markdown = false;
};

// The table's text is Markdown; a terminal shows it without the backticks.
std::string plain(std::string text) {
    text.erase(std::remove(text.begin(), text.end(), '`'), text.end());
    return text;
}

void print_environment(const HelpArgs& args) {
    if (args.markdown) {
        std::cout << settings::markdown();
        return;
    }
    std::cout << "Kiln's environment variables (docs/environment.md has the same table). Unset or "
                 "empty means\nthe default; a value that does not parse is an error naming the "
                 "variable.\n";
    for (const settings::Definition& d : settings::all())
        std::cout << '\n'
                  << d.name << "  (" << settings::type_name(d.type) << ")\n"
                  << "    " << plain(d.description) << '\n'
                  << "    default: " << plain(settings::default_shown(d)) << '\n'
                  << "    values:  " << plain(settings::range_text(d)) << '\n';
}

} // namespace

void add_help_command(CLI::App& app) {
    auto args = std::make_shared<HelpArgs>();
    auto* help = app.add_subcommand(
        "help", "Print this help, or with `environment` every KILN_* environment variable");
    help->require_subcommand(0, 1);
    auto* environment = help->add_subcommand(
        "environment", "Every KILN_* environment variable: type, default, values and meaning");
    environment->add_flag("--markdown", args->markdown,
                          "print it as docs/environment.md, a Markdown table");
    environment->callback([args] { print_environment(*args); });
    help->callback([help] {
        if (!help->get_subcommands().empty()) return;
        // Not App::help(), which prints the help of the subcommand used: this one.
        const CLI::App* top = help->get_parent();
        std::cout << top->get_formatter()->make_help(top, top->get_name(),
                                                     CLI::AppFormatMode::Normal);
    });
}

} // namespace kiln::tools
