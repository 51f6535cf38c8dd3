// A cache directory shared by a team, or one that others can write: nothing Kiln writes can be
// redirected by a planted link, the modes let every member write, a private cache that is not the
// user's own is neither read nor written, and damage heals.
//
// As root (CI) the attacks run as two real users (fork, then setresuid); otherwise the attacker's
// files are made beforehand by the same user. They are staged in a group-writable, non-sticky
// directory: the kernel's protected_symlinks covers only sticky world-writable ones and would
// hide a bug elsewhere.

#include "kiln/cache/signing.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/error.hpp"
#include "kiln/log.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"
#include "test_accounts.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <vector>

using kiln::cache::Config;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::entry_file;
using kiln::test::key_in_shard;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::mode_of;
using kiln::test::read_file;
using kiln::test::spill_files;
using kiln::test::TempDir;
using kiln::test::write_file;

namespace {

constexpr gid_t kTeam = kiln::test::kTeamGroup;
constexpr uid_t kVictim = kiln::test::kTeamMembers[0];
constexpr uid_t kAttacker = kiln::test::kTeamMembers[1];
constexpr uid_t kStranger = kiln::test::kStranger;

// Root, with the test accounts in the user and group databases (Kiln asks them who is a member).
bool as_root() {
    static const bool ready = ::geteuid() == 0 && kiln::test::ensure_test_accounts().empty();
    return ready;
}

struct ChildResult {
    int code = -1;
    std::string log; ///< what Kiln logged in the child (warnings are once per process)
};

// Runs @p body in a child process as @p uid (group kTeam, or the stranger's own) when root, else
// as this user, with @p umask_value.
ChildResult run_as(uid_t uid, const std::function<int()>& body, mode_t umask_value = 022) {
    int fds[2];
    if (::pipe(fds) != 0) return {};
    const pid_t child = kiln::test::spawn([&] {
        ::close(fds[0]);
        ::umask(umask_value);
        if (as_root()) {
            const gid_t group = uid == kStranger ? kStranger : kTeam;
            const gid_t groups[] = {group};
            if (::setgroups(1, groups) != 0 || ::setresgid(group, group, group) != 0 ||
                ::setresuid(uid, uid, uid) != 0)
                return 90;
        }
        std::ostringstream log;
        kiln::logger().sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_st>(log));
        const int code = body();
        const std::string text = log.str();
        if (::write(fds[1], text.data(), text.size()) != static_cast<ssize_t>(text.size()))
            return 91;
        return code;
    });
    ::close(fds[1]);
    ChildResult result;
    char buffer[4096];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
        result.log.append(buffer, static_cast<std::size_t>(n));
    ::close(fds[0]);
    result.code = kiln::test::wait_for(child);
    return result;
}

int as_user(uid_t uid, const std::function<int()>& body, mode_t umask_value = 022) {
    return run_as(uid, body, umask_value).code;
}

ChildResult as_me(const std::function<int()>& body) {
    return run_as(::geteuid(), body);
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
        ++n;
    return n;
}

// The name of a file of counts left for @p counters while it was locked, with the suffix @p n.
std::string spill_name(const std::string& counters, unsigned n) {
    char suffix[20];
    std::snprintf(suffix, sizeof suffix, "%016x", n);
    return "." + counters + "-pending." + suffix;
}

gid_t group_of(const std::filesystem::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st.st_gid;
}

// A staging directory the second user can traverse and write: group-writable, not sticky.
struct Staging {
    TempDir temp;
    std::filesystem::path team;   // root:kTeam 2770 (mode 0777 without root)
    std::filesystem::path victim; // the victim's own directory, with a file in it
    Staging() {
        ::chmod(temp.path().c_str(), 0755);
        team = temp / "team";
        std::filesystem::create_directory(team);
        victim = temp / "victim-home";
        std::filesystem::create_directory(victim);
        write_file(victim / "file", "precious");
        if (as_root()) {
            ::chown(team.c_str(), 0, kTeam);
            ::chmod(team.c_str(), 02770);
            ::chown(victim.c_str(), kVictim, kVictim);
            ::chown((victim / "file").c_str(), kVictim, kVictim);
            ::chmod(victim.c_str(), 0700);
        } else {
            ::chmod(team.c_str(), 0770);
        }
    }
    bool victim_untouched() const {
        std::size_t files = 0;
        for ([[maybe_unused]] const auto& item : std::filesystem::directory_iterator(victim))
            ++files;
        return files == 1 && read_file(victim / "file") == "precious";
    }
};

Config shared_config(const std::filesystem::path& dir) {
    Config config = config_for(dir);
    config.shared = true;
    config.save_source = true;
    return config;
}

} // namespace

TEST(TeamCache, EveryMemberWritesASharedCacheWhateverTheCreatorsUmask) {
    if (!as_root()) GTEST_SKIP() << "needs root to run as two members of one group";
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto first = key_in_shard(0x01, "first");
    const auto second = key_in_shard(0x02, "second");
    EXPECT_EQ(as_user(
                  kVictim,
                  [&] { return Store(shared_config(dir)).store(make_entry(first)) ? 0 : 1; }, 077),
              0);
    EXPECT_EQ(as_user(
                  kAttacker,
                  [&] {
                      Store store(shared_config(dir));
                      if (!store.store(make_entry(second))) return 1;
                      if (!store.local().save_source(first, "source")) return 2;
                      return store.load(first) ? 0 : 3;
                  },
                  0),
              0);
    EXPECT_EQ(mode_of(dir), 02770u);
    EXPECT_EQ(group_of(dir), kTeam) << "the group of the directory it was created in";
    EXPECT_EQ(mode_of(entry_file(dir, first).parent_path()), 02770u);
    EXPECT_EQ(mode_of(entry_file(dir, first)), 0660u);
    EXPECT_EQ(mode_of(entry_file(dir, second)), 0660u);
    EXPECT_EQ(mode_of(dir / "01" / "stats"), 0660u);
    EXPECT_EQ(mode_of(dir / "usage"), 0660u);
}

TEST(TeamCache, ModesHoldUnderAnyUmaskWhicheverOperationComesFirst) {
    const std::vector<std::pair<const char*, std::function<void(Store&)>>> first_operations = {
        {"load", [](Store& s) { s.load(key_of("k")); }},
        {"store", [](Store& s) { s.store(make_entry(key_of("k"))); }},
        {"save_source", [](Store& s) { s.local().save_source(key_of("k"), "src"); }},
        {"save_time_trace", [](Store& s) { s.local().save_time_trace(key_of("k"), "{}"); }},
    };
    for (const mode_t mask : {mode_t{0}, mode_t{077}}) {
        for (const bool shared : {false, true}) {
            for (const auto& [name, operation] : first_operations) {
                SCOPED_TRACE(std::string(name) + (shared ? " shared" : " private") + " umask " +
                             std::to_string(mask));
                TempDir temp;
                const auto dir = temp / "parent" / "kiln";
                Config config = config_for(dir);
                config.shared = shared;
                config.save_source = true;
                ASSERT_EQ(as_user(
                              ::geteuid(),
                              [&, op = operation] {
                                  Store store(config);
                                  op(store);
                                  store.store(make_entry(key_of("k")));
                                  store.local().save_source(key_of("k"), "src");
                                  return 0;
                              },
                              mask),
                          0);
                const mode_t dir_mode = shared ? 02770 : 0700;
                const mode_t file_mode = shared ? 0660 : 0600;
                EXPECT_EQ(mode_of(temp / "parent"), dir_mode);
                EXPECT_EQ(mode_of(dir), dir_mode);
                EXPECT_EQ(mode_of(entry_file(dir, key_of("k")).parent_path()), dir_mode);
                EXPECT_EQ(mode_of(entry_file(dir, key_of("k"))), file_mode);
                EXPECT_EQ(mode_of(entry_file(dir, key_of("k")).replace_extension(".cu")),
                          file_mode);
                EXPECT_EQ(mode_of(entry_file(dir, key_of("k")).parent_path() / "stats"), file_mode);
                EXPECT_EQ(mode_of(dir / "usage"), file_mode);
            }
        }
    }
}

TEST(TeamCache, APlantedShardLinkIsNeverWrittenThrough) {
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto key = key_in_shard(0xab, "victim's kernel");
    // The victim's cache exists; a member replaces a shard with a link to the victim's home.
    ASSERT_EQ(
        as_user(kVictim,
                [&] { return Store(shared_config(dir)).store(make_entry(key_of("x"))) ? 0 : 1; }),
        0);
    ASSERT_EQ(as_user(kAttacker,
                      [&] {
                          std::error_code ec;
                          std::filesystem::remove_all(dir / "ab", ec);
                          std::filesystem::create_directory_symlink(staging.victim, dir / "ab", ec);
                          return ec ? 1 : 0;
                      }),
              0);
    const auto victim = run_as(kVictim, [&] {
        Store store(shared_config(dir));
        store.load(key);
        if (!store.store(make_entry(key))) return 1;
        store.local().save_source(key, "source");
        store.local().save_time_trace(key, "{}");
        store.invalidate(key);
        return 0;
    });
    EXPECT_EQ(victim.code, 0) << victim.log;
    EXPECT_EQ(count_of(victim.log, "a symbolic link where a shard directory should be"), 1u)
        << victim.log;
    EXPECT_TRUE(staging.victim_untouched());
    EXPECT_FALSE(std::filesystem::is_symlink(dir / "ab")) << "the link was replaced by a shard";
}

TEST(TeamCache, PlantedStatsAndUsageLinksAreNeverWrittenThrough) {
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto key = key_in_shard(0x3c, "k");
    ASSERT_EQ(
        as_user(kVictim, [&] { return Store(shared_config(dir)).store(make_entry(key)) ? 0 : 1; }),
        0);
    ASSERT_EQ(as_user(kAttacker,
                      [&] {
                          std::error_code ec;
                          for (const auto& name : {dir / "usage", dir / "3c" / "stats"}) {
                              std::filesystem::remove(name, ec);
                              std::filesystem::create_symlink(staging.victim / "file", name, ec);
                          }
                          return ec ? 1 : 0;
                      }),
              0);
    EXPECT_EQ(as_user(kVictim,
                      [&] {
                          Store store(shared_config(dir));
                          if (!store.load(key)) return 1;
                          if (!store.store(make_entry(key_in_shard(0x3c, "more")))) return 2;
                          store.local().stats();
                          store.local().prune(0);
                          return 0;
                      }),
              0);
    EXPECT_TRUE(staging.victim_untouched());
}

TEST(TeamCache, AStoreNeverFollowsALinkPlantedUnderAnEntryOrSourceName) {
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto key = key_in_shard(0x44, "k");
    ASSERT_EQ(
        as_user(kVictim,
                [&] { return Store(shared_config(dir)).store(make_entry(key_of("x"))) ? 0 : 1; }),
        0);
    ASSERT_EQ(as_user(kAttacker,
                      [&] {
                          std::error_code ec;
                          const auto shard = entry_file(dir, key).parent_path();
                          std::filesystem::create_directory(shard, ec);
                          ::chmod(shard.c_str(), 02770);
                          const auto hex = key.hex();
                          for (const char* suffix : {".kiln", ".cu", ".json"})
                              std::filesystem::create_symlink(staging.victim / "file",
                                                              shard / (hex + suffix), ec);
                          return ec ? 1 : 0;
                      }),
              0);
    EXPECT_EQ(as_user(kVictim,
                      [&] {
                          Store store(shared_config(dir));
                          if (store.load(key)) return 1;
                          if (!store.store(make_entry(key))) return 2;
                          if (!store.local().save_source(key, "source")) return 3;
                          if (!store.local().save_time_trace(key, "{}")) return 4;
                          return store.load(key) ? 0 : 5;
                      }),
              0);
    EXPECT_TRUE(staging.victim_untouched());
}

// A stranger (no group shared with the team) makes the team's path first in a world-writable,
// sticky parent, as in /tmp, and fills it with valid entries; or a directory carries the team's
// group but could still have been made or opened up by someone outside it.
TEST(TeamCache, ASharedDirectoryOnlyTheTeamCouldHaveMadeIsUsedAndNoOtherIs) {
    if (!as_root()) GTEST_SKIP() << "needs root to make directories as other users and groups";
    struct Case {
        const char* what;
        uid_t owner;
        gid_t group;
        mode_t mode;
        const char* why; ///< in the warning; nullptr: the directory is used
    };
    const Case cases[] = {
        {"a stranger's, readable by all", kStranger, kStranger, 02755, "is not one of your groups"},
        {"a stranger's, opened to all but writing", kStranger, kStranger, 0775,
         "is not one of your groups"},
        {"a stranger's with the team's group", kStranger, kTeam, 02770,
         "who is not a member of its group"},
        {"the team's without setgid", kAttacker, kTeam, 0770, "setgid"},
        {"the team's, readable by others", kAttacker, kTeam, 02775, "gives other users access"},
        {"root's for the team", 0, kTeam, 02770, nullptr},
        {"another member's", kAttacker, kTeam, 02770, nullptr},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        TempDir temp;
        ::chmod(temp.path().c_str(), 01777); // like /tmp: anyone makes a name there first
        const auto dir = temp / "teamcache";
        const auto planted = make_entry(key_of("planted"));
        {
            Store owner(config_for(dir));
            ASSERT_TRUE(owner.store(planted)); // a valid entry: it would load as a hit
        }
        for (const auto& item : std::filesystem::recursive_directory_iterator(dir)) {
            ::lchown(item.path().c_str(), c.owner, c.group);
            ::chmod(item.path().c_str(), item.is_directory() ? 02770 : 0660);
        }
        ::chown(dir.c_str(), c.owner, c.group);
        ::chmod(dir.c_str(), c.mode);
        const auto member = run_as(kVictim, [&] {
            Store store(shared_config(dir));
            const bool hit = store.load(planted.key).has_value();
            const bool stored = store.store(make_entry(key_of("mine")));
            return (hit ? 1 : 0) | (stored ? 2 : 0);
        });
        if (c.why) {
            EXPECT_EQ(member.code, 0) << "neither read nor written\n" << member.log;
            EXPECT_EQ(count_of(member.log, "is not used"), 1u) << member.log;
            EXPECT_NE(member.log.find(c.why), std::string::npos) << member.log;
            EXPECT_FALSE(std::filesystem::exists(entry_file(dir, key_of("mine"))));
        } else {
            EXPECT_EQ(member.code, 3) << "read and written\n" << member.log;
        }
    }
}

namespace {

// The victim's directory gains files named as Kiln's bookkeeping, which a write through a link
// to it would rewrite, chmod or prune.
void add_bookkeeping_names(const std::filesystem::path& home) {
    for (const char* name : {"usage", ".tmp.keep", "kiln.conf"}) {
        write_file(home / name, "mine");
        if (as_root()) ::chown((home / name).c_str(), kVictim, kVictim);
        ::chmod((home / name).c_str(), 0600);
    }
}

bool bookkeeping_names_untouched(const std::filesystem::path& home) {
    std::size_t files = 0;
    for ([[maybe_unused]] const auto& item : std::filesystem::directory_iterator(home))
        ++files;
    if (files != 4 || read_file(home / "file") != "precious") return false;
    for (const char* name : {"usage", ".tmp.keep", "kiln.conf"})
        if (read_file(home / name) != "mine" || mode_of(home / name) != 0600u) return false;
    return true;
}

} // namespace

// In a group-writable, non-sticky parent (docs/cache.md's team parent), a member renames the
// victim's cache directory and leaves a link to the victim's home in its place.
TEST(TeamCache, ACacheDirectorySwappedForAPlantedLinkIsNeverFollowed) {
    if (!as_root()) GTEST_SKIP() << "needs root: the attacker must be another member";
    for (const bool shared : {false, true}) {
        SCOPED_TRACE(shared ? "shared" : "private");
        Staging staging;
        add_bookkeeping_names(staging.victim);
        const auto dir = staging.team / "kiln";
        Config config = shared ? shared_config(dir) : config_for(dir);
        ASSERT_EQ(
            as_user(kVictim, [&] { return Store(config).store(make_entry(key_of("x"))) ? 0 : 1; }),
            0);
        ASSERT_EQ(as_user(kAttacker,
                          [&] {
                              std::error_code ec;
                              std::filesystem::rename(dir, staging.team / "moved", ec);
                              if (ec) return 1;
                              std::filesystem::create_directory_symlink(staging.victim, dir, ec);
                              return ec ? 2 : 0;
                          }),
                  0);
        const auto victim = run_as(kVictim, [&] {
            Store store(config);
            if (store.load(key_of("x"))) return 1;
            if (store.store(make_entry(key_in_shard(0x3c, "new")))) return 2;
            store.local().save_source(key_in_shard(0x3c, "new"), "source");
            store.local().stats();
            store.local().prune(0);
            store.local().clear();
            store.local().verify(true);
            return 0;
        });
        EXPECT_EQ(victim.code, 0) << victim.log;
        EXPECT_EQ(count_of(victim.log, "is not used"), 1u) << victim.log;
        EXPECT_NE(victim.log.find("symbolic link " + dir.string()), std::string::npos)
            << victim.log;
        EXPECT_TRUE(bookkeeping_names_untouched(staging.victim));
        EXPECT_TRUE(std::filesystem::is_symlink(dir)) << "refused, not replaced";
    }
}

// A link the user made in a directory only they (and root) can write is theirs, and followed:
// `~/.cache -> /data/cache`, relative, absolute and through a chain of two.
TEST(TeamCache, ALinkInTheUsersOwnDirectoryIsFollowed) {
    TempDir home;
    ::chmod(home.path().c_str(), 0755);
    std::filesystem::create_directories(home / "data" / "cache");
    std::filesystem::create_directory_symlink(home / "data" / "cache", home / "absolute");
    std::filesystem::create_directory_symlink("data/cache", home / "relative");
    std::filesystem::create_directory_symlink("relative", home / "chain");
    for (const char* name : {"absolute", "relative", "chain"}) {
        SCOPED_TRACE(name);
        const auto key = key_of(name);
        const auto child = as_me([&] {
            Store store(config_for(home / name / "kiln"));
            return store.store(make_entry(key)) && store.load(key) ? 0 : 1;
        });
        EXPECT_EQ(child.code, 0) << child.log;
        EXPECT_EQ(child.log.find("is not used"), std::string::npos) << child.log;
        EXPECT_TRUE(std::filesystem::exists(entry_file(home / "data" / "cache" / "kiln", key)));
    }
}

// A link in a directory every user can write (even one the user made there) could have been
// swapped by anyone: refused, with one warning, and nothing written where it points.
TEST(TeamCache, ALinkInAWorldWritableDirectoryIsRefused) {
    TempDir temp;
    ::chmod(temp.path().c_str(), 0755);
    const auto sticky = temp / "tmp";
    std::filesystem::create_directory(sticky);
    ::chmod(sticky.c_str(), 01777);
    std::filesystem::create_directory(temp / "target");
    std::filesystem::create_directory_symlink(temp / "target", sticky / "cache");
    const auto child = as_me([&] {
        Store store(config_for(sticky / "cache"));
        return store.store(make_entry(key_of("k"))) ? 1 : 0;
    });
    EXPECT_EQ(child.code, 0) << child.log;
    EXPECT_EQ(count_of(child.log, "is not used"), 1u) << child.log;
    EXPECT_NE(child.log.find("is writable by every user"), std::string::npos) << child.log;
    EXPECT_TRUE(std::filesystem::is_empty(temp / "target"));
}

// One member's kiln.conf that does not parse warns the others and leaves them the defaults; only
// its writer, who can fix it, gets the error.
TEST(TeamCache, AnotherMembersBrokenSettingsFileIsAWarningNotAFailure) {
    if (!as_root()) GTEST_SKIP() << "needs root to write the file as another member";
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto configure = [&] {
        ::setenv("KILN_CACHE_DIR", dir.c_str(), 1);
        ::setenv("KILN_CACHE_SHARED", "1", 1);
        ::unsetenv("KILN_CACHE_MAX_SIZE");
        return Config::from_environment();
    };
    ASSERT_EQ(as_user(kAttacker,
                      [&] {
                          if (!Store(shared_config(dir)).store(make_entry(key_of("x")))) return 1;
                          write_file(dir / "kiln.conf", "max-size = 1G\nfrobnicate = yes\n");
                          return 0;
                      }),
              0);
    const auto victim = run_as(kVictim, [&] {
        const Config config = configure();
        return config.max_size == Config().max_size ? 0 : 1;
    });
    EXPECT_EQ(victim.code, 0) << "the defaults, no exception\n" << victim.log;
    EXPECT_EQ(count_of(victim.log, "unknown setting 'frobnicate'"), 1u) << victim.log;
    EXPECT_NE(victim.log.find("not by you"), std::string::npos) << victim.log;
    const auto writer = run_as(kAttacker, [&] {
        try {
            configure();
            return 1;
        } catch (const kiln::ConfigError&) {
            return 0;
        }
    });
    EXPECT_EQ(writer.code, 0) << "its own file: the error, to fix it";
}

// prune and clear count only what they removed: entries in a shard the caller cannot write stay,
// and are reported as not removed, with the reason.
TEST(TeamCache, PruneAndClearCountOnlyWhatTheyRemoved) {
    if (!as_root()) GTEST_SKIP() << "needs root: a shard another user cannot write";
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto locked = key_in_shard(0x6a, "locked");
    const auto free = key_in_shard(0x6b, "free");
    ASSERT_EQ(as_user(kVictim,
                      [&] {
                          Store store(shared_config(dir));
                          return store.store(make_entry(locked)) && store.store(make_entry(free))
                                     ? 0
                                     : 1;
                      }),
              0);
    const auto shard = entry_file(dir, locked).parent_path();
    ASSERT_EQ(::chown(shard.c_str(), 0, kTeam), 0);
    ASSERT_EQ(::chmod(shard.c_str(), 02750), 0); // the team reads it, only root writes it
    for (const bool clear : {false, true}) {
        SCOPED_TRACE(clear ? "clear" : "prune");
        const int code = as_user(kVictim, [&] {
            Store store(shared_config(dir));
            const auto result = clear ? store.local().clear() : store.local().prune(0);
            if (result.entries != (clear ? 0u : 1u)) return 1; // the free one, once
            if (result.not_removed != 1u || result.error != EACCES) return 2;
            return 0;
        });
        EXPECT_EQ(code, 0);
        EXPECT_TRUE(std::filesystem::exists(entry_file(dir, locked)));
        EXPECT_FALSE(std::filesystem::exists(entry_file(dir, free)));
    }
}

TEST(TeamCache, APrivateCacheThatIsNotTheUsersOwnIsNeitherReadNorWritten) {
    TempDir temp;
    const auto dir = temp / "kiln";
    const auto planted = make_entry(key_of("planted"));
    {
        Store owner(config_for(dir));
        ASSERT_TRUE(owner.store(planted)); // a valid entry: a planted cubin would load
    }
    if (as_root()) {
        // Another user's cache, readable by all: its cubins could be loaded.
        ::chmod(temp.path().c_str(), 0755);
        for (const auto& item : std::filesystem::recursive_directory_iterator(dir)) {
            ::lchown(item.path().c_str(), kAttacker, kAttacker);
            ::chmod(item.path().c_str(), item.is_directory() ? 0755 : 0644);
        }
        ::chown(dir.c_str(), kAttacker, kAttacker);
        ::chmod(dir.c_str(), 0755);
    } else {
        ::chmod(dir.c_str(), 0777); // writable by every user
    }
    const auto victim = run_as(as_root() ? kVictim : ::geteuid(), [&] {
        Store store(config_for(dir));
        if (store.load(planted.key)) return 1;
        if (store.store(make_entry(key_of("mine")))) return 2;
        if (store.load(planted.key)) return 3;
        return 0;
    });
    EXPECT_EQ(victim.code, 0) << victim.log;
    const std::string& log = victim.log;
    EXPECT_EQ(count_of(log, "is not used"), 1u) << log;
    EXPECT_NE(log.find(as_root() ? "not by you" : "writable by every user"), std::string::npos)
        << log;
    EXPECT_FALSE(std::filesystem::exists(entry_file(dir, key_of("mine"))));
}

TEST(TeamCache, AShardOwnedByAnotherUserInAPrivateCacheIsRefusedWithOneWarning) {
    if (!as_root()) GTEST_SKIP() << "needs root to make a directory another user owns";
    TempDir temp;
    ::chmod(temp.path().c_str(), 0755);
    const auto dir = temp / "kiln";
    std::filesystem::create_directory(dir);
    ::chown(dir.c_str(), kVictim, kVictim);
    ::chmod(dir.c_str(), 0700);
    const auto key = key_in_shard(0x5e, "k");
    const auto shard = entry_file(dir, key).parent_path();
    std::filesystem::create_directory(shard);
    ::chown(shard.c_str(), kAttacker, kAttacker);
    ::chmod(shard.c_str(), 0777);
    const auto victim = run_as(kVictim, [&] {
        Store store(config_for(dir));
        if (store.store(make_entry(key))) return 1;
        if (store.store(make_entry(key_in_shard(0x5e, "again")))) return 2;
        if (store.load(key)) return 3;
        return store.store(make_entry(key_in_shard(0x5f, "elsewhere"))) ? 0 : 4;
    });
    EXPECT_EQ(victim.code, 0) << victim.log;
    EXPECT_EQ(count_of(victim.log, "the shard is not used"), 1u) << victim.log;
    EXPECT_TRUE(std::filesystem::is_empty(shard));
}

// A member's process that ends while the shard's stats are locked leaves its counts beside them,
// as a file the team can read and remove; the next member to get the lock adds them. A file
// there of a group other than the cache's is no member's counts.
TEST(TeamCache, AMembersLeftCountsAreAddedAndAFileOfAnotherGroupIsNot) {
    if (!as_root()) GTEST_SKIP() << "needs root to run as two members of one group";
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto key = key_in_shard(0x21, "k");
    ASSERT_EQ(
        as_user(kVictim, [&] { return Store(shared_config(dir)).store(make_entry(key)) ? 0 : 1; }),
        0);
    const auto shard = dir / "21";
    {
        kiln::test::HeldLock lock(shard / "stats");
        ASSERT_TRUE(lock.held());
        ASSERT_EQ(as_user(kAttacker,
                          [&] {
                              ::alarm(kiln::test::kWatchdogSeconds);
                              return Store(shared_config(dir)).load(key) ? 0 : 1;
                          }),
                  0);
    }
    const auto left = spill_files(shard, "stats");
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(mode_of(shard / left[0]), 0660u);
    EXPECT_EQ(group_of(shard / left[0]), kTeam);
    const auto foreign = shard / spill_name("stats", 0xf1);
    write_file(foreign, "hits 1000\nend\n");
    ASSERT_EQ(::chown(foreign.c_str(), kAttacker, kStranger), 0);
    ASSERT_EQ(::chmod(foreign.c_str(), 0664), 0); // readable: refused for its group alone
    ASSERT_EQ(as_user(kVictim,
                      [&] {
                          Store store(shared_config(dir));
                          return store.store(make_entry(key_in_shard(0x21, "more"))) ? 0 : 1;
                      }),
              0);
    EXPECT_TRUE(spill_files(shard, "stats").empty());
    const std::string stats = read_file(shard / "stats");
    EXPECT_NE(stats.find("hits 1\n"), std::string::npos) << stats;
}

TEST(CacheHealing, ADirectoryWhereAnEntryShouldBeIsAMissRemovedAndFlaggedByVerify) {
    TempDir dir;
    const auto entry = make_entry(key_of("k"));
    const auto path = entry_file(dir.path(), entry.key);
    std::filesystem::create_directories(path / "inside");
    {
        Store store(config_for(dir.path()));
        const auto result = store.local().verify(false);
        EXPECT_EQ(result.damaged, 1u);
        ASSERT_EQ(result.problems.size(), 1u);
        EXPECT_EQ(result.problems[0].first, path);
    }
    const auto child = as_me([&] { return Store(config_for(dir.path())).load(entry.key) ? 1 : 0; });
    EXPECT_EQ(child.code, 0);
    const std::string& log = child.log;
    EXPECT_EQ(count_of(log, "is damaged"), 1u) << log;
    EXPECT_NE(log.find("it was removed"), std::string::npos) << log;
    EXPECT_FALSE(std::filesystem::exists(path));
    Store store(config_for(dir.path()));
    EXPECT_TRUE(store.store(entry));
    EXPECT_TRUE(store.load(entry.key));
}

// A directory, FIFO, link or hard link at a bookkeeping name would turn the size limit or the
// counters off for good: the next update replaces it (one warning), verify reports it, and
// verify --fix removes it. What a link pointed to is never touched.
TEST(CacheHealing, AnythingButKilnsOwnFileAtABookkeepingNameIsReplacedAndReported) {
    for (const char* kind : {"directory", "fifo", "symlink", "hardlink"}) {
        SCOPED_TRACE(kind);
        TempDir temp;
        const auto dir = temp / "kiln";
        const auto outside = temp / "outside";
        write_file(outside, "precious");
        {
            Store store(config_for(dir));
            ASSERT_TRUE(store.store(make_entry(key_in_shard(0x11, "first"))));
        }
        const auto shard_stats = dir / "11" / "stats";
        for (const auto& name : {dir / "usage", shard_stats}) {
            std::filesystem::remove(name);
            const std::string what = kind;
            if (what == "directory") std::filesystem::create_directories(name / "inside");
            if (what == "fifo") ASSERT_EQ(::mkfifo(name.c_str(), 0600), 0);
            if (what == "symlink") std::filesystem::create_symlink(outside, name);
            if (what == "hardlink") std::filesystem::create_hard_link(outside, name);
        }
        {
            Store store(config_for(dir));
            const auto problems = store.local().check_dir();
            std::size_t bookkeeping = 0;
            for (const auto& problem : problems)
                bookkeeping += problem.path == dir / "usage" || problem.path == shard_stats;
            EXPECT_EQ(bookkeeping, 2u);
        }
        // The size limit holds again: many entries in a small cache.
        const auto child = as_me([&] {
            Config config = config_for(dir);
            config.max_size = 64 << 10;
            Store store(config);
            for (int i = 0; i < 64; ++i)
                if (!store.store(make_entry(key_in_shard(0x11, "e" + std::to_string(i)), 4096)))
                    return 1;
            return 0;
        });
        EXPECT_EQ(child.code, 0) << child.log;
        EXPECT_EQ(count_of(child.log, "bookkeeping file"), 1u) << child.log;
        std::uint64_t bytes = 0;
        for (const auto& item : std::filesystem::recursive_directory_iterator(dir))
            if (item.path().extension() == ".kiln") bytes += item.file_size();
        EXPECT_LE(bytes, std::uint64_t{64 << 10}) << "the limit is enforced again";
        EXPECT_TRUE(std::filesystem::is_regular_file(dir / "usage"));
        EXPECT_EQ(read_file(outside), "precious");
        // verify --fix removes what is at a bookkeeping name and is not Kiln's.
        std::filesystem::remove(dir / "usage");
        std::filesystem::create_directory(dir / "usage");
        Store store(config_for(dir));
        const auto fixed = store.local().verify(true);
        EXPECT_GE(fixed.removed, 1u);
        EXPECT_FALSE(std::filesystem::exists(dir / "usage"));
    }
}

TEST(CacheHealing, VerifyFixRemovesADirectoryInAnEntrysPlace) {
    TempDir dir;
    const auto path = entry_file(dir.path(), key_of("k"));
    std::filesystem::create_directories(path);
    Store store(config_for(dir.path()));
    const auto result = store.local().verify(true);
    EXPECT_EQ(result.damaged, 1u);
    EXPECT_EQ(result.removed, 1u);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_EQ(store.local().verify(false).damaged, 0u);
}

TEST(CacheHealing, AFileOrLinkWhereAShardShouldBeIsRemovedAndTheShardMadeAnew) {
    for (const bool link : {false, true}) {
        TempDir dir;
        const auto entry = make_entry(key_of("x"));
        const auto shard = entry_file(dir.path(), entry.key).parent_path();
        if (link)
            std::filesystem::create_directory_symlink(dir / "elsewhere", shard);
        else
            write_file(shard, "in the way");
        {
            Store store(config_for(dir.path()));
            const auto problems = store.local().check_dir();
            ASSERT_EQ(problems.size(), 1u);
            EXPECT_EQ(problems[0].path, shard);
            EXPECT_EQ(store.local().verify(false).damaged, 1u);
        }
        const auto child = as_me([&] {
            Store store(config_for(dir.path()));
            return store.store(entry) && store.load(entry.key) ? 0 : 1;
        });
        EXPECT_EQ(child.code, 0) << "healed";
        const std::string& log = child.log;
        EXPECT_EQ(count_of(log, "it was removed and the shard made anew"), 1u) << log;
        EXPECT_TRUE(std::filesystem::is_directory(shard) && !std::filesystem::is_symlink(shard));
        EXPECT_FALSE(std::filesystem::exists(dir / "elsewhere"));
    }
}

TEST(CacheHealing, VerifyFixRemovesAFileWhereAShardShouldBe) {
    TempDir dir;
    write_file(dir / "7f", "in the way");
    Store store(config_for(dir.path()));
    const auto result = store.local().verify(true);
    EXPECT_EQ(result.damaged, 1u);
    EXPECT_EQ(result.removed, 1u);
    EXPECT_FALSE(std::filesystem::exists(dir / "7f"));
    EXPECT_TRUE(store.local().check_dir().empty());
}

TEST(CacheHealing, AReadOnlyCacheNeitherRemovesNorClaimsToHaveRemoved) {
    TempDir dir;
    const auto entry = make_entry(key_of("k"));
    const auto path = entry_file(dir.path(), entry.key);
    std::filesystem::create_directories(path);
    write_file(dir / "7f", "in the way");
    const std::string log = as_me([&] {
                                Config config = config_for(dir.path());
                                config.readonly = true;
                                Store store(config);
                                store.load(entry.key);
                                store.load(key_in_shard(0x7f, "k"));
                                return 0;
                            }).log;
    EXPECT_EQ(count_of(log, "is damaged"), 1u) << log;
    EXPECT_EQ(log.find("was removed"), std::string::npos) << log;
    EXPECT_EQ(log.find("kiln cache stats"), std::string::npos) << log;
    EXPECT_NE(log.find("read-only"), std::string::npos) << log;
    EXPECT_TRUE(std::filesystem::is_directory(path));
    EXPECT_TRUE(std::filesystem::is_regular_file(dir / "7f"));
}

// Whatever is planted at the names of counts left for a locked counter file (a link, a FIFO, a
// directory, a hard link, a file too large, one of garbage) is never followed, never blocks, and
// is not read as counts: the next holder of the lock removes it (one warning), adds the real
// counts beside it, and counting goes on.
TEST(CacheHealing, WhatIsPlantedAtTheNamesOfLeftCountsIsNeitherFollowedNorTrusted) {
    TempDir temp;
    const auto dir = temp / "kiln";
    const auto shard = dir / "11";
    const auto outside = temp / "outside";
    const std::string counts = "hits 1000\nend\n"; // what following a link would add
    write_file(outside, counts);
    ASSERT_TRUE(Store(config_for(dir)).store(make_entry(key_in_shard(0x11, "first"))));
    std::filesystem::create_symlink(outside, shard / spill_name("stats", 1));
    ASSERT_EQ(::mkfifo((shard / spill_name("stats", 2)).c_str(), 0600), 0);
    std::filesystem::create_directories(shard / spill_name("stats", 3) / "inside");
    std::filesystem::create_hard_link(outside, shard / spill_name("stats", 4));
    std::string large;
    while (large.size() <= 4096)
        large += "hits 1\n";
    write_file(shard / spill_name("stats", 5), large + "end\n");
    write_file(shard / spill_name("stats", 6), "\x01\x02 garbage\nhits banana\nmisses -\nend\n");
    write_file(shard / spill_name("stats", 7), "hits 5\nmisses 2\nend\n"); // real counts
    write_file(shard / ".stats-pending", "");                              // the mark they leave
    const auto child = as_me([&] {
        ::alarm(kiln::test::kWatchdogSeconds);
        Store store(config_for(dir));
        return store.store(make_entry(key_in_shard(0x11, "second"))) ? 0 : 1;
    });
    EXPECT_EQ(child.code, 0) << child.log;
    EXPECT_EQ(count_of(child.log, "counts left for a locked counter file"), 1u) << child.log;
    EXPECT_TRUE(spill_files(shard, "stats").empty());
    EXPECT_EQ(read_file(outside), counts);
    EXPECT_EQ(std::filesystem::hard_link_count(outside), 1u);
    const std::string stats = read_file(shard / "stats");
    EXPECT_NE(stats.find("hits 5\n"), std::string::npos) << stats;
    EXPECT_NE(stats.find("misses 2\n"), std::string::npos) << stats;
    EXPECT_NE(stats.find("stores 2\n"), std::string::npos) << stats;
}

// verify reports what is planted at those names, and a file whose process died before finishing
// it; --fix removes them. Real counts, and counts being written, are no problem.
TEST(CacheHealing, VerifyReportsWhatIsPlantedAtTheNamesOfLeftCountsAndFixRemovesIt) {
    TempDir temp;
    const auto dir = temp / "kiln";
    const auto shard = dir / "11";
    const auto outside = temp / "outside";
    write_file(outside, "precious");
    ASSERT_TRUE(Store(config_for(dir)).store(make_entry(key_in_shard(0x11, "first"))));
    const std::vector<std::filesystem::path> planted = {
        shard / spill_name("stats", 1),      // a link
        dir / spill_name("usage", 2),        // a FIFO
        dir / spill_name("remote-stats", 3), // a directory
        shard / spill_name("stats", 4),      // a hard link
        shard / spill_name("stats", 5),      // never finished, and stale
    };
    std::filesystem::create_symlink(outside, planted[0]);
    ASSERT_EQ(::mkfifo(planted[1].c_str(), 0600), 0);
    std::filesystem::create_directories(planted[2] / "inside");
    std::filesystem::create_hard_link(outside, planted[3]);
    write_file(planted[4], "hits 3\n");
    kiln::test::set_mtime(planted[4], std::time(nullptr) - 7200);
    const auto real = shard / spill_name("stats", 6);
    write_file(real, "hits 5\nend\n");
    const auto unfinished = shard / spill_name("stats", 7);
    write_file(unfinished, "hits 5\n");
    Store store(config_for(dir));
    const auto found = store.local().verify(false);
    std::set<std::filesystem::path> reported;
    for (const auto& [path, what] : found.problems)
        reported.insert(path);
    for (const auto& path : planted)
        EXPECT_EQ(reported.count(path), 1u) << path;
    EXPECT_EQ(reported.count(real), 0u);
    EXPECT_EQ(reported.count(unfinished), 0u);
    EXPECT_EQ(found.damaged, planted.size());
    const auto fixed = store.local().verify(true);
    EXPECT_EQ(fixed.removed, planted.size());
    for (const auto& path : planted)
        EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(path))) << path;
    EXPECT_TRUE(std::filesystem::exists(real));
    EXPECT_TRUE(std::filesystem::exists(unfinished));
    EXPECT_EQ(read_file(outside), "precious");
}

// A member who plants thousands of files there slows no update much: each holder of the lock
// removes a few (one warning per process), and verify --fix the rest.
TEST(CacheHealing, ThousandsOfFilesPlantedAtTheNamesOfLeftCountsAreRemovedAFewPerUpdate) {
    TempDir temp;
    const auto dir = temp / "kiln";
    const auto shard = dir / "11";
    ASSERT_TRUE(Store(config_for(dir)).store(make_entry(key_in_shard(0x11, "first"))));
    constexpr std::size_t kPlanted = 1000;
    for (unsigned i = 0; i < kPlanted; ++i) {
        const auto path = shard / spill_name("stats", i);
        write_file(path, "hits 1\nend\n");
        ASSERT_EQ(::chmod(path.c_str(), 0666), 0); // writable by every user: not to be trusted
    }
    write_file(shard / ".stats-pending", "");
    const auto child = as_me([&] {
        ::alarm(kiln::test::kWatchdogSeconds);
        Store store(config_for(dir));
        return store.store(make_entry(key_in_shard(0x11, "second"))) ? 0 : 1;
    });
    EXPECT_EQ(child.code, 0) << child.log;
    EXPECT_EQ(count_of(child.log, "counts left for a locked counter file"), 1u) << child.log;
    const std::size_t left = spill_files(shard, "stats").size();
    EXPECT_LT(left, kPlanted) << "the update removed some";
    EXPECT_GE(left, kPlanted - 64) << "only a few per update";
    EXPECT_NE(read_file(shard / "stats").find("hits 0\n"), std::string::npos);
    EXPECT_EQ(Store(config_for(dir)).local().verify(true).removed, left);
    EXPECT_TRUE(spill_files(shard, "stats").empty());
}

// A lock held for good must not fill the directory: a process that finds kMaxSpillsKept (256)
// files of counts waiting drops its own, with a warning. Once the lock is free, each update adds
// a few of them, and the counts come out exact.
TEST(CacheHealing, ALockHeldForGoodDoesNotFillTheDirectoryWithLeftCounts) {
    TempDir temp;
    const auto dir = temp / "kiln";
    const auto shard = dir / "11";
    const auto first = make_entry(key_in_shard(0x11, "first"));
    ASSERT_TRUE(Store(config_for(dir)).store(first));
    constexpr std::size_t kWaiting = 256;
    for (unsigned i = 0; i < kWaiting; ++i)
        write_file(shard / spill_name("stats", i), "hits 1\nend\n");
    {
        kiln::test::HeldLock lock(shard / "stats");
        ASSERT_TRUE(lock.held());
        const auto child = as_me([&] {
            ::alarm(kiln::test::kWatchdogSeconds);
            return Store(config_for(dir)).load(first.key) ? 0 : 1;
        });
        EXPECT_EQ(child.code, 0) << child.log;
        EXPECT_EQ(count_of(child.log, "could not be left beside it"), 1u) << child.log;
        EXPECT_EQ(spill_files(shard, "stats").size(), kWaiting);
    }
    write_file(shard / ".stats-pending", ""); // the mark the processes that left them made
    Store store(config_for(dir));
    for (int i = 0; i < 16 && !spill_files(shard, "stats").empty(); ++i)
        ASSERT_TRUE(store.store(make_entry(key_in_shard(0x11, "more " + std::to_string(i)))));
    EXPECT_TRUE(spill_files(shard, "stats").empty());
    const std::string stats = read_file(shard / "stats");
    EXPECT_NE(stats.find("hits 256\n"), std::string::npos) << stats;
}

// Signed entries in a team's directory, as three users: CI signs, another member plants unsigned
// and self-signed entries, and a member who trusts only CI's key uses only CI's.
TEST(TeamCache, WithTrustedKeysOnlyTheEntriesCiSignedAreUsed) {
    if (!as_root()) GTEST_SKIP() << "needs root to run as three members of one group";
    Staging staging;
    const auto dir = staging.team / "kiln";
    const auto ci_key =
        std::make_shared<const kiln::cache::SigningKey>(kiln::cache::SigningKey::generate("ci"));
    const auto member_key = std::make_shared<const kiln::cache::SigningKey>(
        kiln::cache::SigningKey::generate("member"));
    const auto signed_by_ci = key_in_shard(0x11, "ci");
    const auto planted = key_in_shard(0x12, "planted");
    const auto self_signed = key_in_shard(0x13, "self-signed");
    const uid_t ci = kiln::test::kTeamMembers[2];
    ASSERT_EQ(as_user(ci,
                      [&] {
                          Config config = shared_config(dir);
                          config.signing_key = ci_key;
                          return Store(config).store(make_entry(signed_by_ci)) ? 0 : 1;
                      }),
              0);
    ASSERT_EQ(as_user(kAttacker,
                      [&] {
                          Config config = shared_config(dir);
                          if (!Store(config).store(make_entry(planted))) return 1;
                          config.signing_key = member_key;
                          return Store(config).store(make_entry(self_signed)) ? 0 : 2;
                      }),
              0);
    const auto reader = run_as(kVictim, [&] {
        Config config = shared_config(dir);
        config.trusted_keys =
            std::make_shared<const kiln::cache::TrustedKeys>(kiln::cache::TrustedKeys::parse(
                kiln::cache::format_public_key(ci_key->public_key()), "trusted"));
        Store store(config);
        int code = 0;
        if (!store.load(signed_by_ci)) code |= 1;
        if (store.load(planted)) code |= 2;
        if (store.load(self_signed)) code |= 4;
        store.local().write_statistics();
        if (store.local().stats().untrusted != 2) code |= 8;
        return code;
    });
    EXPECT_EQ(reader.code, 0) << reader.log;
    EXPECT_NE(reader.log.find("not signed by a key in KILN_TRUSTED_KEYS"), std::string::npos)
        << reader.log;
    // Without trusted keys every member's entry is used, as docs/cache.md says shared mode does.
    EXPECT_EQ(as_user(kVictim,
                      [&] {
                          Store store(shared_config(dir));
                          return store.load(planted) && store.load(self_signed) ? 0 : 1;
                      }),
              0);
}
