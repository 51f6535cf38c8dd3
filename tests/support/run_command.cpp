#include "run_command.hpp"

#include "temp_dir.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <memory>

namespace kiln::test {

CommandResult run_command(const std::string& command) {
    TempDir dir;
    const auto err_path = dir / "stderr";
    const std::string full = command + " 2>'" + err_path.string() + "'";
    CommandResult result;
    FILE* pipe = popen(full.c_str(), "r");
    if (!pipe) return result;
    char buffer[4096];
    std::size_t n;
    while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
        result.out.append(buffer, n);
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.err = read_file(err_path);
    return result;
}

} // namespace kiln::test
