// `kiln help environment`: every variable of the settings table, whatever the environment holds,
// and as --markdown exactly docs/environment.md.

#include "run_command.hpp"

#include "kiln/settings.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

using kiln::test::run_command;

namespace {

std::string kiln_tool(const std::string& args) {
    return std::string(KILN_TOOL_PATH) + " " + args;
}

} // namespace

TEST(HelpCli, EnvironmentListsEveryVariableWithTypeDefaultAndValues) {
    // A bad value does not stop it: this is the list to read when a variable does not parse.
    const auto result = run_command("KILN_LOG_LEVEL=xyz " + kiln_tool("help environment"));
    ASSERT_EQ(result.status, 0) << result.err;
    EXPECT_EQ(result.err, "");
    for (const kiln::settings::Definition& d : kiln::settings::all()) {
        const auto at = result.out.find(std::string("\n") + d.name + "  (" +
                                        kiln::settings::type_name(d.type) + ")\n");
        ASSERT_NE(at, std::string::npos) << d.name << " missing from:\n" << result.out;
        const std::string block = result.out.substr(at, result.out.find("\n\n", at + 1) - at);
        EXPECT_NE(block.find("default: "), std::string::npos) << block;
        EXPECT_NE(block.find("values:  "), std::string::npos) << block;
        EXPECT_EQ(block.find('`'), std::string::npos) << "Markdown left in the text: " << block;
    }
}

TEST(HelpCli, EnvironmentAsMarkdownIsTheDocsPage) {
    const auto result = run_command(kiln_tool("help environment --markdown"));
    ASSERT_EQ(result.status, 0) << result.err;
    std::ifstream in(std::string(KILN_SOURCE_DIR) + "/docs/environment.md");
    ASSERT_TRUE(in) << "docs/environment.md is missing";
    std::ostringstream page;
    page << in.rdbuf();
    EXPECT_EQ(result.out, page.str())
        << "regenerate it: kiln help environment --markdown > docs/environment.md";
}

TEST(HelpCli, HelpAlonePrintsTheGeneralHelp) {
    const auto result = run_command(kiln_tool("help"));
    ASSERT_EQ(result.status, 0) << result.err;
    for (const char* command : {"compile", "cache", "warm", "help"})
        EXPECT_NE(result.out.find(command), std::string::npos) << command << "\n" << result.out;
    EXPECT_EQ(run_command(kiln_tool("help nothing")).status, 2) << "an unknown topic is a usage "
                                                                   "error";
}

TEST(HelpCli, EveryOtherCommandStillChecksTheTable) {
    for (const std::string variable :
         {"KILN_REMOTE_CACHE_TTL=1500ms", "KILN_DRIVER_TRACE=sometimes", "KILN_NVRTC_CACHE=2"}) {
        const auto result = run_command(variable + " " + kiln_tool("cache dir"));
        EXPECT_EQ(result.status, 1) << variable;
        const std::string name = variable.substr(0, variable.find('='));
        EXPECT_EQ(result.err.rfind("kiln: " + name + "=", 0), 0u) << result.err;
    }
}

TEST(HelpCli, AnUnknownCommandOrOptionIsNamedWithTheClosestOne) {
    struct Case {
        const char* args;
        const char* named;
        const char* suggested; // nullptr: none is close, the command's list instead
    };
    const Case cases[] = {
        {"cache lsx", "unknown command 'lsx' for 'kiln cache'", "(did you mean 'ls'?)"},
        {"complie x.cu", "unknown command 'complie' for 'kiln'", "(did you mean 'compile'?)"},
        {"version", "unknown command 'version' for 'kiln'", "(did you mean '--version'?)"},
        {"compile --archh sm_90 x.cu", "unknown option '--archh' for 'kiln compile'",
         "(did you mean '--arch'?)"},
        {"--verison", "unknown option '--verison' for 'kiln'", "(did you mean '--version'?)"},
        {"frobnicate", "unknown command 'frobnicate' for 'kiln'", nullptr},
    };
    for (const Case& c : cases) {
        const auto result = run_command(kiln_tool(c.args));
        EXPECT_EQ(result.status, 2) << c.args << "\n" << result.err;
        EXPECT_EQ(result.out, "") << c.args;
        EXPECT_NE(result.err.find(c.named), std::string::npos) << c.args << "\n" << result.err;
        if (c.suggested)
            EXPECT_NE(result.err.find(c.suggested), std::string::npos) << result.err;
        else
            EXPECT_NE(result.err.find("its commands are compile, demo, warm"), std::string::npos)
                << result.err;
        EXPECT_EQ(result.err.find("A subcommand is required"), std::string::npos) << result.err;
    }
}

TEST(HelpCli, HelpOfACommandIsThatCommandsHelp) {
    const auto warm = run_command(kiln_tool("help warm"));
    ASSERT_EQ(warm.status, 0) << warm.err;
    // The manifest's schema is warm's own help, not the general one.
    EXPECT_NE(warm.out.find("\"elementwise\""), std::string::npos) << warm.out;
    EXPECT_EQ(warm.out, run_command(kiln_tool("warm --help")).out);
    const auto general = run_command(kiln_tool("--help"));
    ASSERT_EQ(general.status, 0) << general.err;
    EXPECT_NE(general.out.find("warm"), std::string::npos) << general.out;
    EXPECT_EQ(general.out.find("\"elementwise\""), std::string::npos) << general.out;

    const auto ls = run_command(kiln_tool("help cache ls"));
    ASSERT_EQ(ls.status, 0) << ls.err;
    EXPECT_EQ(ls.out, run_command(kiln_tool("cache ls --help")).out);
    const auto unknown = run_command(kiln_tool("help cache lsx"));
    EXPECT_EQ(unknown.status, 2);
    EXPECT_NE(unknown.err.find("unknown command 'lsx' for 'kiln cache' (did you mean 'ls'?)"),
              std::string::npos)
        << unknown.err;
}
