#include "remote_stats_file.hpp"

#include "local/layout.hpp"
#include "local/stats_file.hpp"

#include <cerrno>

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
    const std::string name(kRemoteStatsName);
    bool locked = false;
    {
        auto file = LockedStats::open(root_fd, name, true, mode, force_mode, LockWait::brief);
        if (file) {
            RemoteStats totals = parse_remote_stats(file->text());
            totals += delta;
            return file->write_text(format_remote_stats(totals)) == 0;
        }
        locked = errno == EWOULDBLOCK;
    }
    if (!locked) return false;
    // Saved at exit, which must not wait on a lock another process holds: left beside the file
    // for the next holder of its lock.
    const int error = write_spill(root_fd, name, format_remote_stats(delta), mode, force_mode);
    if (error != 0) warn_counts_lost(name, error);
    return error == 0;
}

RemoteStats read_remote_stats(int root_fd, bool shared) {
    return parse_remote_stats(read_counter_text(root_fd, std::string(kRemoteStatsName), shared));
}

} // namespace kiln::cache::detail
