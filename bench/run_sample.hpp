#pragma once
// What the benches that time fresh processes share: running this program again (posix_spawn, no
// shell) and reading what it prints, and handing it bytes in a private temporary file.

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace kiln::bench {

/// Runs @p path with @p argv (null-terminated, argv[0] first) and the environment @p envp, and
/// reads its standard output to the end.
/// @return what it printed, when it started and exited with status 0; nothing otherwise.
inline std::optional<std::string>
run_for_output(const char* path, const std::vector<const char*>& argv, char* const* envp) {
    int fds[2];
    if (::pipe(fds) != 0) return std::nullopt;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    pid_t pid = 0;
    const int error =
        posix_spawn(&pid, path, &actions, nullptr, const_cast<char* const*>(argv.data()), envp);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    std::string text;
    char buffer[256];
    for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
        text.append(buffer, static_cast<std::size_t>(n));
    ::close(fds[0]);
    int status = 0;
    if (error != 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        return std::nullopt;
    return text;
}

/// Writes @p bytes to a new file under $TMPDIR (or /tmp) named `<stem>-XXXXXX` by mkstemp: a
/// fresh name only this process opened, mode 0600.
/// @return its path, or an empty string when it could not be written (nothing is left behind).
inline std::string write_temporary(const std::string& bytes, const std::string& stem) {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + stem + "-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) return {};
    const bool written =
        ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::close(fd);
    if (!written) {
        ::unlink(path.c_str());
        return {};
    }
    return path;
}

} // namespace kiln::bench
