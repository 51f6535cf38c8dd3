// The settings table (kiln/settings.hpp): unset and empty variables give the defaults, a bad value
// is a ConfigError naming the variable, ranges hold; docs/environment.md is what the table
// generates; and the sources read no KILN_* variable by name, nor name one the table lacks.

#include "kiln/cache/remote.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"
#include "kiln/settings.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace settings = kiln::settings;
using kiln::Variable;
using std::chrono::milliseconds;

namespace {

const fs::path kSource = KILN_SOURCE_DIR;

// Sets (or, with nullptr, unsets) a variable for one scope, then puts back what was there.
class ScopedEnv {
  public:
    ScopedEnv(const char* name, const char* value)
        : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv() {
        if (m_old)
            ::setenv(m_name.c_str(), m_old->c_str(), 1);
        else
            ::unsetenv(m_name.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

  private:
    std::string m_name;
    std::optional<std::string> m_old;
};

// Every variable of the table unset for one scope (the suite's main() sets KILN_CACHE_DIR).
class TableUnset {
  public:
    TableUnset() {
        for (const settings::Definition& d : settings::all())
            m_unset.push_back(std::make_unique<ScopedEnv>(d.name, nullptr));
    }

  private:
    std::vector<std::unique_ptr<ScopedEnv>> m_unset;
};

// The accessor of the row's type, with the result as text, so every row is read the same way.
std::string read_as_text(const settings::Definition& d) {
    switch (d.type) {
    case settings::Type::flag:
        return settings::flag(d.variable) ? "1" : "0";
    case settings::Type::size:
        return std::to_string(settings::size(d.variable));
    case settings::Type::duration:
        return std::to_string(settings::duration(d.variable).count()) + "ms";
    default:
        return settings::text(d.variable);
    }
}

std::string typed_default_as_text(const settings::Definition& d) {
    switch (d.type) {
    case settings::Type::flag:
        return d.default_flag ? "1" : "0";
    case settings::Type::size:
        return std::to_string(d.default_size);
    case settings::Type::duration:
        return std::to_string(d.default_duration.count()) + "ms";
    default:
        return d.default_text;
    }
}

// The ConfigError's message when @p variable's value @p value is read, or "" when none is thrown.
std::string error_for(Variable variable, const char* value) {
    const settings::Definition& d = settings::definition(variable);
    ScopedEnv set(d.name, value);
    try {
        settings::check(variable);
    } catch (const kiln::ConfigError& e) {
        return e.what();
    }
    return "";
}

milliseconds duration_of(Variable variable, const char* value) {
    ScopedEnv set(settings::definition(variable).name, value);
    return settings::duration(variable);
}

std::string read(const fs::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// The C++ sources of the library and the tool.
std::vector<fs::path> sources() {
    std::vector<fs::path> files;
    for (const char* folder : {"base", "cache", "runtime", "kernels", "tools"}) {
        const fs::path root = kSource / folder;
        if (!fs::is_directory(root)) continue;
        for (const auto& entry : fs::recursive_directory_iterator(root)) {
            const auto ext = entry.path().extension();
            if (entry.is_regular_file() && (ext == ".cpp" || ext == ".hpp" || ext == ".h"))
                files.push_back(entry.path());
        }
    }
    return files;
}

// The contents of the ordinary string literals of a C++ source, escapes left as written. Comments
// and raw strings are skipped: Kiln's raw strings hold CUDA source, whose KILN_ macros are no
// variables.
std::vector<std::string> string_literals(const std::string& text) {
    std::vector<std::string> literals;
    const std::size_t n = text.size();
    std::size_t i = 0;
    auto identifier_char = [&](std::size_t at) {
        return std::isalnum(static_cast<unsigned char>(text[at])) || text[at] == '_';
    };
    while (i < n) {
        if (text.compare(i, 2, "//") == 0) {
            i = text.find('\n', i);
            if (i == std::string::npos) break;
        } else if (text.compare(i, 2, "/*") == 0) {
            i = text.find("*/", i + 2);
            if (i == std::string::npos) break;
            i += 2;
        } else if (text[i] == 'R' && i + 1 < n && text[i + 1] == '"' &&
                   (i == 0 || !identifier_char(i - 1) || text[i - 1] == '8' || text[i - 1] == 'L' ||
                    text[i - 1] == 'u' || text[i - 1] == 'U')) {
            const std::size_t open = text.find('(', i + 2);
            if (open == std::string::npos) break;
            const std::string close = ")" + text.substr(i + 2, open - i - 2) + "\"";
            const std::size_t end = text.find(close, open + 1);
            if (end == std::string::npos) break;
            i = end + close.size();
        } else if (text[i] == '"' ||
                   (text[i] == '\'' &&
                    !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
            // A quote after a digit is a digit separator (1'000), not a character literal.
            const char quote = text[i];
            std::string literal;
            for (++i; i < n && text[i] != quote && text[i] != '\n'; ++i) {
                if (text[i] == '\\' && i + 1 < n) literal += text[i++];
                literal += text[i];
            }
            ++i;
            if (quote == '"') literals.push_back(literal);
        } else {
            ++i;
        }
    }
    return literals;
}

} // namespace

TEST(Settings, TheTableHasOneRowPerVariableInItsOrder) {
    const auto rows = settings::all();
    ASSERT_EQ(rows.size(), static_cast<std::size_t>(Variable::remote_cache_retry) + 1);
    std::set<std::string> names;
    std::size_t index = 0;
    for (const settings::Definition& d : rows) {
        EXPECT_EQ(static_cast<std::size_t>(d.variable), index++) << d.name;
        EXPECT_EQ(&settings::definition(d.variable), &d) << d.name;
        EXPECT_EQ(settings::find(d.name), &d) << d.name;
        EXPECT_TRUE(std::regex_match(d.name, std::regex("KILN_[A-Z0-9_]+"))) << d.name;
        EXPECT_TRUE(names.insert(d.name).second) << d.name << " is defined twice";
        EXPECT_STRNE(d.description, "") << d.name;
        EXPECT_FALSE(settings::range_text(d).empty()) << d.name;
        EXPECT_FALSE(settings::default_shown(d).empty()) << d.name;
    }
    EXPECT_EQ(settings::find("KILN_NO_SUCH_VARIABLE"), nullptr);
    EXPECT_EQ(settings::find("KILN_CACHE_DIR")->type, settings::Type::path);
}

TEST(Settings, UnsetOrEmptyGivesTheDefault) {
    for (const settings::Definition& d : settings::all()) {
        for (const char* value : {static_cast<const char*>(nullptr), ""}) {
            ScopedEnv set(d.name, value);
            EXPECT_EQ(read_as_text(d), typed_default_as_text(d))
                << d.name << (value ? " empty" : " unset");
            EXPECT_EQ(settings::raw(d.variable), std::nullopt) << d.name;
        }
    }
    const TableUnset unset;
    EXPECT_TRUE(settings::flag(Variable::lineinfo));
    EXPECT_EQ(settings::size(Variable::cache_max_size), std::uint64_t{2} << 30);
    EXPECT_EQ(settings::duration(Variable::remote_cache_timeout), milliseconds(50));
    EXPECT_EQ(settings::text(Variable::log_level), "warn");
    EXPECT_EQ(settings::text(Variable::cache_dir), "") << "no default: the cache finds one";
}

TEST(Settings, TheDefaultTextSpellsTheTypedDefault) {
    for (const settings::Definition& d : settings::all()) {
        if (*d.default_text == '\0') continue; // the code finds the default
        ScopedEnv set(d.name, d.default_text);
        EXPECT_EQ(read_as_text(d), typed_default_as_text(d)) << d.name << "=" << d.default_text;
    }
}

TEST(Settings, ValuesAreReadByType) {
    {
        ScopedEnv set("KILN_LINEINFO", "Off");
        EXPECT_FALSE(settings::flag(Variable::lineinfo));
        EXPECT_EQ(settings::raw(Variable::lineinfo), "Off");
    }
    {
        ScopedEnv set("KILN_CACHE_MAX_SIZE", "500M");
        EXPECT_EQ(settings::size(Variable::cache_max_size), std::uint64_t{500} << 20);
    }
    {
        ScopedEnv set("KILN_REMOTE_CACHE_MODE", "remote-only");
        EXPECT_EQ(settings::text(Variable::remote_cache_mode), "remote-only");
    }
    {
        ScopedEnv set("KILN_DRIVER_LIBRARY", "/opt/libcuda.so");
        EXPECT_EQ(settings::text(Variable::driver_library), "/opt/libcuda.so");
    }
    EXPECT_EQ(duration_of(Variable::remote_cache_ttl, "7d"), milliseconds(7 * 86400000LL));
    EXPECT_EQ(duration_of(Variable::remote_cache_timeout, "2s"), milliseconds(2000));
    EXPECT_EQ(duration_of(Variable::remote_cache_retry, "5m"), milliseconds(300000));
    EXPECT_EQ(duration_of(Variable::remote_cache_retry, "1h"), milliseconds(3600000));
    // A bare number is in the variable's own unit.
    EXPECT_EQ(duration_of(Variable::remote_cache_connect_timeout, "250"), milliseconds(250));
    EXPECT_EQ(duration_of(Variable::remote_cache_retry, "5"), milliseconds(5000));
    EXPECT_EQ(duration_of(Variable::remote_cache_ttl, "3600"), milliseconds(3600000));
}

TEST(Settings, ABadValueIsAConfigErrorNamingTheVariable) {
    for (const settings::Definition& d : settings::all()) {
        if (d.type == settings::Type::text || d.type == settings::Type::path) continue;
        const std::string message = error_for(d.variable, "bogus!");
        EXPECT_NE(message.find(std::string(d.name) + "='bogus!'"), std::string::npos)
            << d.name << ": " << message;
    }
    EXPECT_NE(error_for(Variable::log_level, "loud").find("use trace, debug"), std::string::npos);
    EXPECT_NE(error_for(Variable::cache_shared, "group").find("is not a flag"), std::string::npos);
    EXPECT_NE(error_for(Variable::cache_max_size, "1.5G").find("is not a size"), std::string::npos);
}

TEST(Settings, RangesAreEnforced) {
    // Durations: the timeouts are positive, the expiry is whole seconds, the number has at most
    // nine digits.
    for (const char* zero : {"0", "0ms", "0s"})
        EXPECT_NE(error_for(Variable::remote_cache_timeout, zero).find("positive"),
                  std::string::npos)
            << zero;
    EXPECT_EQ(error_for(Variable::remote_cache_timeout, "1ms"), "");
    EXPECT_EQ(error_for(Variable::remote_cache_ttl, "0"), "");
    EXPECT_NE(error_for(Variable::remote_cache_ttl, "1500ms").find("whole number of seconds"),
              std::string::npos);
    EXPECT_EQ(error_for(Variable::remote_cache_ttl, "2000ms"), "");
    EXPECT_EQ(error_for(Variable::remote_cache_retry, "86399999ms"), "");
    EXPECT_NE(error_for(Variable::remote_cache_retry, "1000000000ms"), "");
    // Each duration has a greatest value: the issue's 200000d overflowed the clock.
    EXPECT_EQ(error_for(Variable::remote_cache_retry, "1d"), "");
    EXPECT_NE(error_for(Variable::remote_cache_retry, "200000d").find("more than 1d"),
              std::string::npos);
    EXPECT_NE(error_for(Variable::remote_cache_retry, "200000d").find("KILN_REMOTE_CACHE_RETRY"),
              std::string::npos);
    EXPECT_EQ(error_for(Variable::remote_cache_timeout, "10m"), "");
    EXPECT_NE(error_for(Variable::remote_cache_timeout, "11m"), "");
    EXPECT_NE(error_for(Variable::remote_cache_connect_timeout, "999999999d"), "");
    EXPECT_EQ(error_for(Variable::remote_cache_ttl, "3650d"), "");
    EXPECT_NE(error_for(Variable::remote_cache_ttl, "3651d"), "");
    for (const char* bad : {"-5", "5 s", "5S", "s", "1.5s", "5w"})
        EXPECT_NE(error_for(Variable::remote_cache_connect_timeout, bad), "") << bad;
    // Choices are spelled exactly; spdlog's other names for two levels are accepted.
    EXPECT_NE(error_for(Variable::log_level, "WARN"), "");
    EXPECT_EQ(error_for(Variable::log_level, "warning"), "");
    EXPECT_EQ(error_for(Variable::log_level, "err"), "");
    EXPECT_NE(error_for(Variable::remote_cache_mode, "readwrite"), "");
    // Sizes up to what 64 bits hold.
    EXPECT_EQ(error_for(Variable::cache_max_size, "16777215T"), "");
    EXPECT_NE(error_for(Variable::cache_max_size, "16777216T"), "");
}

TEST(Settings, ReadingAVariableAsAnotherTypeIsABugNotAConfigError) {
    auto kind = [](auto read) {
        try {
            read();
        } catch (const kiln::ConfigError&) {
            return std::string("ConfigError");
        } catch (const kiln::Error&) {
            return std::string("Error");
        }
        return std::string("nothing");
    };
    EXPECT_EQ(kind([] { settings::flag(Variable::cache_dir); }), "Error");
    EXPECT_EQ(kind([] { settings::size(Variable::lineinfo); }), "Error");
    EXPECT_EQ(kind([] { settings::duration(Variable::cache_max_size); }), "Error");
    EXPECT_EQ(kind([] { settings::text(Variable::remote_cache_ttl); }), "Error");
}

TEST(Settings, TheCacheStructsStartFromTheTablesDefaults) {
    // Config and RemoteConfig keep their own initializers for configurations built in code; they
    // must say what the table says.
    EXPECT_EQ(kiln::cache::Config{}.max_size,
              settings::definition(Variable::cache_max_size).default_size);
    const kiln::cache::RemoteConfig remote;
    EXPECT_EQ(remote.connect_timeout,
              settings::definition(Variable::remote_cache_connect_timeout).default_duration);
    EXPECT_EQ(remote.op_timeout,
              settings::definition(Variable::remote_cache_timeout).default_duration);
    EXPECT_EQ(remote.retry_interval,
              settings::definition(Variable::remote_cache_retry).default_duration);
    EXPECT_EQ(milliseconds(remote.ttl),
              settings::definition(Variable::remote_cache_ttl).default_duration);
    EXPECT_STREQ(kiln::cache::to_string(remote.mode),
                 settings::definition(Variable::remote_cache_mode).default_text);
}

TEST(SettingsDocs, EnvironmentPageIsWhatTheTableGenerates) {
    const fs::path page = kSource / "docs" / "environment.md";
    ASSERT_TRUE(fs::is_regular_file(page)) << page;
    EXPECT_EQ(read(page), settings::markdown())
        << "docs/environment.md differs from the table in base/settings.cpp; regenerate it with "
           "`kiln help environment --markdown > docs/environment.md`";
}

TEST(SettingsSources, EveryVariableNamedInASourceStringIsInTheTable) {
    const auto files = sources();
    ASSERT_GT(files.size(), 100u) << "the sources were not found under " << kSource;
    const std::regex name("KILN_[A-Z0-9_]*");
    std::map<std::string, std::string> named; // name -> the first file that names it
    for (const auto& file : files)
        for (const auto& literal : string_literals(read(file)))
            for (std::sregex_iterator it(literal.begin(), literal.end(), name), end; it != end;
                 ++it) {
                const auto at = static_cast<std::size_t>(it->position());
                const auto after = at + static_cast<std::size_t>(it->length());
                if (at > 0 && (std::isalnum(static_cast<unsigned char>(literal[at - 1])) ||
                               literal[at - 1] == '_'))
                    continue; // part of a longer word
                if (after < literal.size() && literal[after] == '*') continue; // KILN_CACHE_*
                named.emplace(it->str(), fs::relative(file, kSource).string());
            }
    EXPECT_TRUE(named.count("KILN_CACHE_DIR")) << "the scan found no variable at all";
    for (const auto& [variable, file] : named)
        EXPECT_NE(settings::find(variable), nullptr)
            << file << " names " << variable << ", which base/settings.cpp does not define";
}

TEST(SettingsSources, NoVariableIsReadByNameOutsideTheTable) {
    const auto files = sources();
    ASSERT_GT(files.size(), 100u) << "the sources were not found under " << kSource;
    const std::regex by_name(R"((getenv|env::get\w*)\s*\(\s*"KILN_)");
    for (const auto& file : files) {
        const std::string text = read(file);
        std::smatch match;
        if (std::regex_search(text, match, by_name))
            ADD_FAILURE() << fs::relative(file, kSource).string() << " reads a variable by name ("
                          << match.str()
                          << "...): read it through kiln/settings.hpp, and define it in "
                             "base/settings.cpp if it is new";
    }
}

TEST(SettingsSources, EveryVariableInTheTableIsReadSomewhere) {
    // Its enumerator is its name in lower case without KILN_, so a row no code reads shows.
    std::string all_code;
    for (const auto& file : sources())
        if (file.filename() != "settings.cpp" && file.filename() != "settings.hpp")
            all_code += read(file);
    ASSERT_FALSE(all_code.empty());
    for (const settings::Definition& d : settings::all()) {
        std::string enumerator = std::string(d.name).substr(5);
        for (char& c : enumerator)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const std::string use = "Variable::" + enumerator;
        bool found = false;
        for (auto at = all_code.find(use); at != std::string::npos && !found;
             at = all_code.find(use, at + 1)) {
            const char next = all_code[at + use.size()]; // not remote_cache_mode for remote_cache
            found = !(std::isalnum(static_cast<unsigned char>(next)) || next == '_');
        }
        EXPECT_TRUE(found) << d.name << " is in the table, but no code reads " << use;
    }
}
