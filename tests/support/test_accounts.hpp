#pragma once
// Real user and group accounts for tests that run as several users (root only, as in CI): a team
// group with its members and a stranger in no group of the team's. Kiln asks the user and group
// databases who belongs to a team, so numeric ids alone are not enough.

#include <sys/types.h>

#include <string>

namespace kiln::test {

inline constexpr gid_t kTeamGroup = 42700;                            ///< kiln-test-team
inline constexpr uid_t kTeamMembers[] = {42701, 42702, 42711, 42712}; ///< primary group: the team
inline constexpr uid_t kStranger = 42703; ///< kiln-test-stranger, group 42703 only

/// Make the accounts above where they are missing (groupadd/useradd, no home directories).
/// "" when they all exist afterwards, else why not (not root, no useradd, it failed).
std::string ensure_test_accounts();

} // namespace kiln::test
