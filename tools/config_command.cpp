// `kiln cache config [KEY [VALUE]]`: the settings kept in the cache directory (kiln.conf), like
// `ccache -M 5G`: list them, print one, or set one.

#include "cache_access.hpp"
#include "commands.hpp"
#include "output.hpp"

#include "kiln/cache/settings.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <memory>

namespace kiln::tools {

namespace {

struct ConfigArgs {
    std::string key, value;
    bool json = false;
};

// The value in force and where it comes from: the environment, the file, or the default.
struct Effective {
    std::string value, from;
};

// The variable that overrides @p setting, as set; nullopt when unset.
std::optional<std::string> variable_value(const cache::Setting& setting) {
    const settings::Definition* variable = settings::find(setting.variable);
    return variable ? settings::raw(variable->variable) : std::nullopt;
}

Effective effective(const cache::Setting& setting, const std::filesystem::path& file) {
    if (auto variable = variable_value(setting)) return {*variable, setting.variable};
    if (setting.value) return {*setting.value, file.string()};
    if (const settings::Definition* variable = settings::find(setting.variable))
        return {variable->default_text, "default"};
    return {"", "default"};
}

nlohmann::json setting_json(const cache::Setting& setting, const std::filesystem::path& file) {
    const Effective in_force = effective(setting, file);
    return {{"name", setting.name},
            {"value", in_force.value},
            {"from", in_force.from},
            {"file_value", setting.value ? nlohmann::json(*setting.value) : nullptr},
            {"variable", setting.variable},
            {"description", setting.description}};
}

void run_config(const ConfigArgs& args) {
    set_json_errors(args.json);
    // Without the settings file, so that a file with a bad value can be fixed from here.
    cache::Config config = cache::config_without_settings();
    if (config.dir.empty()) cache_config(); // says what to set
    const auto file = cache::settings_path(config.dir);

    if (!args.value.empty()) {
        require_writable(config, "kiln cache config " + args.key + " " + args.value);
        cache::write_setting(config, args.key, args.value);
        if (args.json) {
            print_json({{"name", args.key}, {"value", args.value}, {"file", file.string()}});
        } else {
            std::printf("%s = %s in %s\n", args.key.c_str(), args.value.c_str(), file.c_str());
        }
        for (const auto& setting : cache::read_settings(config))
            if (setting.name == args.key && variable_value(setting))
                std::cerr << "kiln: note: " << setting.variable << " is set, and overrides this "
                          << "setting where it is\n";
        return;
    }
    const auto settings = cache::read_settings(config);
    if (!args.key.empty()) {
        for (const auto& setting : settings) {
            if (setting.name != args.key) continue;
            if (args.json)
                print_json(setting_json(setting, file));
            else
                std::printf("%s\n", effective(setting, file).value.c_str());
            return;
        }
        std::string known;
        for (const auto& setting : settings)
            known += (known.empty() ? "" : ", ") + setting.name;
        throw ArgumentError("unknown setting '" + args.key + "' (known: " + known + ")");
    }
    if (args.json) {
        nlohmann::json list = nlohmann::json::array();
        for (const auto& setting : settings)
            list.push_back(setting_json(setting, file));
        print_json({{"file", file.string()}, {"settings", list}});
        return;
    }
    for (const auto& setting : settings) {
        const Effective in_force = effective(setting, file);
        std::printf("%s = %s  (%s%s)\n", setting.name.c_str(), in_force.value.c_str(),
                    in_force.from == "default" ? "" : "from ", in_force.from.c_str());
    }
}

} // namespace

void add_config_command(CLI::App& cache_cmd) {
    auto args = std::make_shared<ConfigArgs>();
    auto* cmd = cache_cmd.add_subcommand(
        "config", "Settings kept in the cache directory (kiln.conf), under the environment:\n"
                  "`config` lists them, `config KEY` prints one, `config KEY VALUE` sets one.\n"
                  "max-size: the size limit, e.g. 5G (0: no limit; KILN_CACHE_MAX_SIZE "
                  "overrides it)");
    cmd->add_option("key", args->key, "a setting: max-size");
    cmd->add_option("value", args->value, "its new value, e.g. 5G");
    cmd->add_flag("--json", args->json, "print a JSON object");
    cmd->callback([args] { run_config(*args); });
}

} // namespace kiln::tools
