// `kiln compile` by two members of a team into one KILN_CACHE_SHARED=1 directory: whoever comes
// first, the second can add entries, and nothing either writes leaves the cache directory. Runs as
// two real users under root (CI); skips otherwise.

#include "run_command.hpp"
#include "temp_dir.hpp"
#include "test_accounts.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

using kiln::test::run_command;

namespace {

constexpr int kTeam = kiln::test::kTeamGroup;
constexpr int kFirst = kiln::test::kTeamMembers[2];
constexpr int kSecond = kiln::test::kTeamMembers[3];

std::string as_member(int uid, const std::string& command) {
    return "setpriv --reuid=" + std::to_string(uid) + " --regid=" + std::to_string(kTeam) +
           " --groups=" + std::to_string(kTeam) + " sh -c 'umask 022; " + command + "'";
}

std::string kernel(const std::string& name) {
    return "extern \"C\" __global__ void " + name + "(float* p) { *p += 1; }\n";
}

} // namespace

TEST(TeamCacheCli, TheSecondMemberAddsEntriesToACacheTheFirstCreated) {
    if (::geteuid() != 0 || !std::filesystem::exists("/usr/bin/setpriv"))
        GTEST_SKIP() << "needs root and setpriv to run as two members of one group";
    if (const auto why = kiln::test::ensure_test_accounts(); !why.empty()) GTEST_SKIP() << why;
    kiln::test::TempDir dir;
    ::chmod(dir.path().c_str(), 0755);
    const auto team = dir / "team";
    std::filesystem::create_directory(team);
    ::chown(team.c_str(), 0, kTeam);
    ::chmod(team.c_str(), 02770);
    for (const char* name : {"first", "second"}) {
        kiln::test::write_file(dir / (std::string(name) + ".cu"), kernel(name));
        ::chmod((dir / (std::string(name) + ".cu")).c_str(), 0644);
    }
    const std::string env = "KILN_CACHE_SHARED=1 KILN_CACHE_DIR=" + (team / "kiln").string() + " ";
    const auto first = run_command(as_member(
        kFirst, env + KILN_TOOL_PATH " compile " + (dir / "first.cu").string() + " --arch sm_90"));
    ASSERT_EQ(first.status, 0) << first.err;
    const auto second =
        run_command(as_member(kSecond, env + KILN_TOOL_PATH " compile " +
                                           (dir / "second.cu").string() + " --arch sm_90"));
    ASSERT_EQ(second.status, 0) << second.err;
    EXPECT_EQ(second.err.find("ermission denied"), std::string::npos) << second.err;
    // Both entries are there, and the second member's hit on the first's kernel works too.
    const auto again = run_command(as_member(
        kSecond, env + KILN_TOOL_PATH " compile " + (dir / "first.cu").string() + " --arch sm_90"));
    EXPECT_EQ(again.out.rfind("hit ", 0), 0u) << again.out << again.err;
    std::size_t entries = 0;
    for (const auto& item : std::filesystem::recursive_directory_iterator(team / "kiln")) {
        if (item.path().extension() == ".kiln") ++entries;
        struct stat st {};
        ::lstat(item.path().c_str(), &st);
        if (S_ISDIR(st.st_mode))
            EXPECT_EQ(st.st_mode & 07777, 02770u) << item.path();
        else
            EXPECT_EQ(st.st_mode & 07777, 0660u) << item.path();
    }
    EXPECT_EQ(entries, 2u);
}
