#include "test_accounts.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace kiln::test {

namespace {

bool have_group(gid_t gid) {
    return ::getgrgid(gid) != nullptr;
}

bool have_user(uid_t uid) {
    return ::getpwuid(uid) != nullptr;
}

bool all_there() {
    if (!have_group(kTeamGroup) || !have_group(kStranger) || !have_user(kStranger)) return false;
    for (const uid_t uid : kTeamMembers)
        if (!have_user(uid)) return false;
    return true;
}

// Runs @p command, quietly; several test processes may add accounts at once, and the tools
// refuse while another holds their lock, so the caller retries.
void quietly(const std::string& command) {
    [[maybe_unused]] const int status = std::system((command + " >/dev/null 2>&1").c_str());
}

} // namespace

std::string ensure_test_accounts() {
    if (all_there()) return {};
    if (::geteuid() != 0) return "needs root to add test accounts";
    for (const char* tool : {"/usr/sbin/groupadd", "/usr/sbin/useradd"})
        if (!std::filesystem::exists(tool)) return std::string("needs ") + tool;
    const std::string team = std::to_string(kTeamGroup);
    const std::string stranger = std::to_string(kStranger);
    for (int attempt = 0; attempt < 50 && !all_there(); ++attempt) {
        if (!have_group(kTeamGroup)) quietly("groupadd -g " + team + " kiln-test-team");
        if (!have_group(kStranger)) quietly("groupadd -g " + stranger + " kiln-test-stranger");
        for (const uid_t uid : kTeamMembers)
            if (!have_user(uid))
                quietly("useradd -M -N -s /usr/sbin/nologin -u " + std::to_string(uid) + " -g " +
                        team + " kiln-test-" + std::to_string(uid));
        if (!have_user(kStranger))
            quietly("useradd -M -N -s /usr/sbin/nologin -u " + stranger + " -g " + stranger +
                    " kiln-test-stranger");
        if (!all_there()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return all_there() ? std::string() : "groupadd/useradd did not make the test accounts";
}

} // namespace kiln::test
