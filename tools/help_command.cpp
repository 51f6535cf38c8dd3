// `kiln help environment [--markdown]`: every KILN_* variable, from the one table that defines them
// (kiln/settings.hpp), as text for a terminal or as the Markdown page docs/environment.md. `kiln
// help` alone prints the general help, `kiln help COMMAND...` a command's (`kiln help cache ls`
// is `kiln cache ls --help`). None checks the environment first: the list is what to read when a
// variable does not parse.

#include "commands.hpp"
#include "usage_hint.hpp"

#include "kiln/settings.hpp"

#include <algorithm>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace kiln::tools {

namespace {

struct HelpArgs {
    bool markdown = false;
    std::vector<std::string> command; // `kiln help cache ls`: {"cache", "ls"}
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
    auto* help = app.add_subcommand("help", "Print this help, a command's (`kiln help warm`), or "
                                            "with `environment` every KILN_* environment variable");
    help->require_subcommand(0, 1);
    help->add_option("command", args->command, "the command whose help to print, e.g. cache ls");
    auto* environment = help->add_subcommand(
        "environment", "Every KILN_* environment variable: type, default, values and meaning");
    environment->add_flag("--markdown", args->markdown,
                          "print it as docs/environment.md, a Markdown table");
    environment->callback([args] { print_environment(*args); });
    help->callback([help, args] {
        if (!help->get_subcommands().empty()) return;
        // Not App::help(), which prints the help of the subcommand used: this one.
        const CLI::App* top = help->get_parent();
        const CLI::App* shown = top;
        std::string path = top->get_name();
        for (const std::string& word : args->command) {
            const std::vector<std::string> names = subcommand_names(*shown);
            if (std::find(names.begin(), names.end(), word) == names.end()) {
                std::string text = "unknown command '" + word + "' for '" + path + "'";
                if (const std::string near = closest(word, names); !near.empty())
                    text += " (did you mean '" + near + "'?)";
                else
                    text += "; its commands are " + comma_list(names);
                throw CLI::ValidationError(text, CLI::ExitCodes::ExtrasError);
            }
            shown = shown->get_subcommand(word);
            path += " " + word;
        }
        std::cout << shown->get_formatter()->make_help(shown, path, CLI::AppFormatMode::Normal);
    });
}

} // namespace kiln::tools
