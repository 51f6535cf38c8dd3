#include "remote_stats_file.hpp"

#include "local/fs.hpp"
#include "local/layout.hpp"
#include "local/stats_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

namespace kiln::cache::detail {

namespace {

struct RemoteStatsField {
    const char* name;
    std::uint64_t RemoteStats::*member;
};

constexpr RemoteStatsField kRemoteStatsFields[] = {
    {"hits", &RemoteStats::hits},
    {"misses", &RemoteStats::misses},
    {"damaged", &RemoteStats::damaged},
    {"untrusted", &RemoteStats::untrusted},
    {"errors", &RemoteStats::errors},
    {"timeouts", &RemoteStats::timeouts},
    {"skipped", &RemoteStats::skipped},
    {"stores", &RemoteStats::stores},
    {"bytes_read", &RemoteStats::bytes_read},
    {"bytes_written", &RemoteStats::bytes_written},
};

} // namespace

bool is_zero(const RemoteStats& stats) {
    for (const RemoteStatsField& field : kRemoteStatsFields)
        if (stats.*field.member != 0) return false;
    return true;
}

RemoteStats difference(const RemoteStats& a, const RemoteStats& b) {
    RemoteStats d;
    for (const RemoteStatsField& field : kRemoteStatsFields)
        d.*field.member = a.*field.member - b.*field.member;
    return d;
}

std::string format_remote_stats(const RemoteStats& stats) {
    std::string text;
    for (const RemoteStatsField& field : kRemoteStatsFields)
        text += std::string(field.name) + ' ' + std::to_string(stats.*field.member) + '\n';
    return text;
}

RemoteStats parse_remote_stats(std::string_view text) {
    RemoteStats stats;
    for_each_counter_line(text, [&](std::string_view name, std::uint64_t value) {
        for (const RemoteStatsField& field : kRemoteStatsFields)
            if (name == field.name) stats.*field.member = value;
    });
    return stats;
}

bool add_remote_stats(int root_fd, const RemoteStats& delta, mode_t mode, bool force_mode) {
    auto file = LockedStats::open(root_fd, std::string(kRemoteStatsName), true, mode, force_mode,
                                  LockWait::patient);
    if (!file) return false;
    RemoteStats totals = parse_remote_stats(file->text());
    totals += delta;
    return file->write_text(format_remote_stats(totals)) == 0;
}

RemoteStats read_remote_stats(int root_fd) {
    UniqueFd fd = open_at(root_fd, std::string(kRemoteStatsName), kReadFlags);
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 4096) return {};
    std::string text;
    if (read_all(fd.get(), 4096, text) != 0) return {};
    return parse_remote_stats(text);
}

} // namespace kiln::cache::detail
