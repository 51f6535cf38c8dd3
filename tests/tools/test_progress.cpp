// The progress line of `kiln warm` (tools/progress.hpp): its text, drawn on a terminal (the
// command run under a pseudo-terminal), and nothing extra where standard error is no terminal.

#include "progress.hpp"

#include "run_command.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

using kiln::test::run_command;
using kiln::tools::progress_text;
using kiln::tools::ProgressCounts;
using kiln::tools::ProgressLine;

namespace {

// Runs @p command with /bin/sh on a new pseudo-terminal (stdin, stdout and stderr); returns
// everything written to it and the exit status.
std::pair<int, std::string> run_on_terminal(const std::string& command) {
    int terminal = -1;
    const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, nullptr);
    if (pid == 0) {
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    std::string text;
    if (pid < 0) return {-1, text};
    char buffer[4096];
    for (;;) {
        const ssize_t n = ::read(terminal, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; // EIO once the command and its children have closed the terminal
        text.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(terminal);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

std::string manifest(const kiln::test::TempDir& dir) {
    std::string kernels;
    for (int i = 0; i < 3; ++i)
        kernels += std::string(i ? "," : "") +
                   "{\"source\": \"extern \\\"C\\\" __global__ void k(" +
                   "int* p) { *p = " + std::to_string(i) + "; }\"}";
    kiln::test::write_file(dir / "m.json", "{\"kernels\": [" + kernels + "]}");
    return (dir / "m.json").string();
}

} // namespace

TEST(Progress, TextShowsDoneTotalHitsCompilesFailuresAndRate) {
    ProgressCounts counts;
    counts.done = 12;
    counts.total = 40;
    counts.hits = 3;
    counts.compiles = 8;
    counts.failures = 1;
    EXPECT_EQ(progress_text(counts, 4.0), "[12/40] 3 hits, 8 compiles, 1 failures, 3.0/s");
    EXPECT_EQ(progress_text(counts, 0.01), "[12/40] 3 hits, 8 compiles, 1 failures, -")
        << "no rate before a tenth of a second";
}

TEST(Progress, ALineRedrawsInPlaceAndEndsWithANewline) {
    std::mutex mutex;
    std::vector<std::string> written;
    ProgressCounts counts;
    counts.total = 2;
    {
        ProgressLine line(
            true,
            [&] {
                std::lock_guard<std::mutex> lock(mutex);
                return counts;
            },
            [&](const std::string& text) {
                std::lock_guard<std::mutex> lock(mutex);
                written.push_back(text);
            });
        line.start();
        {
            std::lock_guard<std::mutex> lock(mutex);
            counts.done = counts.compiles = 2;
        }
        line.finish();
        line.finish(); // idempotent
    }
    ASSERT_GE(written.size(), 2u);
    for (std::size_t i = 0; i + 1 < written.size(); ++i)
        EXPECT_EQ(written[i].rfind(kiln::tools::kEraseLine, 0), 0u) << written[i];
    EXPECT_NE(written[written.size() - 2].find("[2/2] 0 hits, 2 compiles"), std::string::npos);
    EXPECT_EQ(written.back(), "\n");
}

TEST(Progress, ADisabledLineWritesNothing) {
    std::vector<std::string> written;
    ProgressLine line(
        false, [] { return ProgressCounts{}; },
        [&](const std::string& text) { written.push_back(text); });
    line.start();
    line.finish();
    EXPECT_TRUE(written.empty());
}

TEST(Progress, WarmDrawsTheLineOnATerminalOnly) {
    kiln::test::TempDir dir;
    const std::string kiln =
        "KILN_CACHE_DIR='" + (dir / "cache").string() + "' " KILN_TOOL_PATH " warm ";
    const std::string path = manifest(dir);
    // On a terminal, with worker processes: the line, erased and redrawn, then the summary.
    const auto [status, text] = run_on_terminal(kiln + path + " --arch sm_90 -j 2");
    ASSERT_EQ(status, 0) << text;
    EXPECT_NE(
        text.find(std::string(kiln::tools::kEraseLine) + "[3/3] 0 hits, 3 compiles, 0 failures"),
        std::string::npos)
        << text;
    EXPECT_NE(text.find("warmed 3 kernels"), std::string::npos) << text;

    // Not with --json, even on a terminal.
    const auto [json_status, json_text] = run_on_terminal(kiln + path + " --arch sm_80 --json");
    ASSERT_EQ(json_status, 0) << json_text;
    EXPECT_EQ(json_text.find("compiles, "), std::string::npos) << json_text;

    // Nor where standard error is no terminal.
    const auto piped = run_command(kiln + path + " --arch sm_86");
    ASSERT_EQ(piped.status, 0) << piped.err;
    EXPECT_EQ(piped.err, "");
}

TEST(Progress, ALineNeverStartedEndsNothing) {
    std::vector<std::string> written;
    ProgressLine line(
        true, [] { return ProgressCounts{}; },
        [&](const std::string& text) { written.push_back(text); });
    line.finish(); // e.g. an import that failed before its first check
    EXPECT_TRUE(written.empty());
}
