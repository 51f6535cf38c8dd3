#include "usage_hint.hpp"

#include <algorithm>
#include <cstring>

namespace kiln::tools {

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::vector<std::string> option_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::Option* option : app.get_options()) {
        for (const auto& name : option->get_lnames())
            names.push_back("--" + name);
        for (const auto& name : option->get_snames())
            names.push_back("-" + name);
    }
    return names;
}

std::string path_of(const CLI::App* app) {
    std::string path = app->get_name();
    for (const CLI::App* at = app->get_parent(); at; at = at->get_parent())
        path = at->get_name() + " " + path;
    return path;
}

} // namespace

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
    std::string best;
    std::size_t best_distance = std::max<std::size_t>(2, word.size() / 2) + 1;
    for (const auto& candidate : candidates) {
        // A prefix ("cache remot") is as likely a typo as one wrong letter.
        const std::size_t distance =
            candidate.rfind(word, 0) == 0 ? 1 : edit_distance(word, candidate);
        if (distance < best_distance) best = candidate, best_distance = distance;
    }
    return best;
}

std::string comma_list(const std::vector<std::string>& names) {
    std::string text;
    for (const auto& name : names)
        text += (text.empty() ? "" : ", ") + name;
    return text;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
        names.push_back(sub->get_name());
    return names;
}

std::string unknown_word(const CLI::App& app, int argc, const char* const* argv) {
    const CLI::App* at = &app;
    for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word == "--") return {}; // the rest is the command's (NVRTC options)
        if (word.size() > 1 && word[0] == '-') {
            const std::string name = word.substr(0, word.find('='));
            const CLI::Option* option = at->get_option_no_throw(name);
            if (!option) {
                std::string text = "unknown option '" + name + "' for '" + path_of(at) + "'";
                if (const std::string near = closest(name, option_names(*at)); !near.empty())
                    text += " (did you mean '" + near + "'?)";
                return text;
            }
            // Its value is the next word (not checked: values are the command's to judge).
            if (option->get_items_expected_max() > 0 && name == word && i + 1 < argc) ++i;
            continue;
        }
        const std::vector<std::string> commands = subcommand_names(*at);
        if (commands.empty()) continue; // a positional argument of the command reached
        if (std::find(commands.begin(), commands.end(), word) != commands.end()) {
            at = at->get_subcommand(word);
            continue;
        }
        if (!at->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty())
            continue; // a command with both subcommands and positional arguments
        std::string text = "unknown command '" + word + "' for '" + path_of(at) + "'";
        if (word == "version" && at == &app) return text + " (did you mean '--version'?)";
        if (const std::string near = closest(word, commands); !near.empty())
            return text + " (did you mean '" + near + "'?)";
        return text + "; its commands are " + comma_list(commands);
    }
    return {};
}

} // namespace kiln::tools
