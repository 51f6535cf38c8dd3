#pragma once
// Run a shell command and capture its exit status, stdout and stderr (CLI tests).

#include <string>

namespace kiln::test {

struct CommandResult {
    int status = -1; ///< exit code, or -1 if it did not exit normally
    std::string out, err;
};

/// Run @p command with /bin/sh; stderr is captured separately through a temporary file.
CommandResult run_command(const std::string& command);

} // namespace kiln::test
