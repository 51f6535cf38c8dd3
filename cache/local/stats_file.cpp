#include "stats_file.hpp"

#include "fs.hpp"
#include "layout.hpp"
#include "warn.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>

namespace kiln::cache::detail {

namespace {

struct StatsField {
    const char* name;
    std::uint64_t Counters::*unsigned_member;
    std::int64_t Counters::*signed_member;
};

constexpr StatsField kStatsFields[] = {
    {"hits", &Counters::hits, nullptr},       {"misses", &Counters::misses, nullptr},
    {"damaged", &Counters::damaged, nullptr}, {"evicted", &Counters::evicted, nullptr},
    {"stores", &Counters::stores, nullptr},   {"untrusted", &Counters::untrusted, nullptr},
    {"files", nullptr, &Counters::files},     {"bytes", nullptr, &Counters::bytes},
};

// flock() with LOCK_NB, retried: a holder only reads and rewrites a few lines, or cleans one
// shard (a few dozen files), so a short wait suffices; past it the caller skips the update.
bool lock(int fd, int operation, LockWait wait) {
    const int attempts = wait == LockWait::brief ? 40 : 4000;
    for (int i = 0; i < attempts; ++i) {
        if (::flock(fd, operation | LOCK_NB) == 0) return true;
        if (errno != EWOULDBLOCK && errno != EINTR) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(250));
    }
    errno = EWOULDBLOCK;
    return false;
}

std::string read_text(int fd) {
    struct stat st;
    if (::fstat(fd, &st) != 0 || st.st_size > 4096) return {};
    std::string bytes;
    // A short read means the file shrank meanwhile; the next update rewrites it.
    if (read_at(fd, 0, static_cast<std::size_t>(st.st_size), bytes) != 0) return {};
    return bytes;
}

} // namespace

Counters& Counters::operator+=(const Counters& other) {
    for (const StatsField& field : kStatsFields) {
        if (field.unsigned_member)
            this->*field.unsigned_member += other.*field.unsigned_member;
        else
            this->*field.signed_member += other.*field.signed_member;
    }
    return *this;
}

bool Counters::empty() const {
    for (const StatsField& field : kStatsFields) {
        if (field.unsigned_member && this->*field.unsigned_member != 0) return false;
        if (field.signed_member && this->*field.signed_member != 0) return false;
    }
    return true;
}

std::string format_counters(const Counters& counters) {
    std::string text;
    for (const StatsField& field : kStatsFields) {
        const std::int64_t value = field.unsigned_member
                                       ? static_cast<std::int64_t>(counters.*field.unsigned_member)
                                       : std::max<std::int64_t>(0, counters.*field.signed_member);
        text += field.name;
        text += ' ';
        text += std::to_string(value);
        text += '\n';
    }
    return text;
}

void for_each_counter_line(std::string_view text,
                           const std::function<void(std::string_view, std::uint64_t)>& fn) {
    while (!text.empty()) {
        const std::size_t end = std::min(text.find('\n'), text.size());
        const std::string line(text.substr(0, end));
        text.remove_prefix(std::min(end + 1, text.size()));
        const std::size_t space = line.find(' ');
        if (space == std::string::npos) continue;
        const std::string value_text = line.substr(space + 1);
        char* parse_end = nullptr;
        errno = 0;
        const unsigned long long value = std::strtoull(value_text.c_str(), &parse_end, 10);
        if (errno != 0 || parse_end == value_text.c_str() || *parse_end != '\0') continue;
        fn(std::string_view(line).substr(0, space), value);
    }
}

Counters parse_counters(std::string_view text) {
    Counters counters;
    for_each_counter_line(text, [&](std::string_view name, std::uint64_t value) {
        for (const StatsField& field : kStatsFields) {
            if (name != field.name) continue;
            if (field.unsigned_member)
                counters.*field.unsigned_member = value;
            else
                counters.*field.signed_member = static_cast<std::int64_t>(value);
        }
    });
    return counters;
}

std::optional<LockedStats> LockedStats::open(int dir_fd, const std::string& name, bool create,
                                             mode_t mode, bool force_mode, LockWait wait) {
    const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | (create ? O_CREAT : 0);
    UniqueFd fd = open_at(dir_fd, name, flags, mode);
    // Updated in place, so it must be what Kiln makes: no link, directory, FIFO, device or hard
    // link to a file elsewhere, and in a private cache this user's own.
    struct stat st {};
    const auto acceptable = [&] {
        return ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
               !(st.st_mode & S_IWOTH) && (force_mode || st.st_uid == ::geteuid());
    };
    if (!fd || !acceptable()) {
        const int error = fd ? EPERM : errno;
        // Anything else at the name (planted, or damage) is replaced where this process may
        // create the file: left there, it would turn the size limit or the counters off for good.
        // Removing a name never touches what it links to.
        if (!create || (error != EPERM && error != ELOOP && error != EISDIR && error != ENXIO &&
                        error != ENOTDIR)) {
            errno = error;
            return std::nullopt;
        }
        fd = UniqueFd();
        if (remove_at(dir_fd, name) != 0) {
            errno = error;
            return std::nullopt;
        }
        static std::atomic<bool> warned{false};
        if (!warned.exchange(true))
            warn("kernel cache: the bookkeeping file '" + name +
                 "' was not a regular file of this cache (a link, a directory, a FIFO, a hard "
                 "link or another user's file): it was replaced and its counters restart. "
                 "Further replacements are not reported; `kiln cache verify` lists them.");
        fd = open_at(dir_fd, name, flags | O_EXCL, mode);
        if (!fd || !acceptable()) {
            errno = fd ? EPERM : errno;
            return std::nullopt;
        }
    }
    // Only the owner may chmod; in a shared cache another member may own the file already.
    if (force_mode && st.st_uid == ::geteuid()) ::fchmod(fd.get(), mode);
    if (!lock(fd.get(), LOCK_EX, wait)) return std::nullopt;
    return LockedStats(std::move(fd));
}

bool LockedStats::fresh() const {
    struct stat st;
    return ::fstat(m_fd.get(), &st) == 0 && st.st_size == 0;
}

Counters LockedStats::read() const {
    return parse_counters(text());
}

std::string LockedStats::text() const {
    return read_text(m_fd.get());
}

int LockedStats::write(const Counters& counters) const {
    return write_text(format_counters(counters));
}

int LockedStats::write_text(std::string_view text) const {
    // In place under the lock: one small pwrite, then drop any longer old tail.
    const ssize_t n = ::pwrite(m_fd.get(), text.data(), text.size(), 0);
    if (n < 0) return errno;
    if (static_cast<std::size_t>(n) != text.size()) return EIO;
    if (::ftruncate(m_fd.get(), static_cast<off_t>(text.size())) != 0) return errno;
    return 0;
}

std::optional<Counters> add_counters(int dir_fd, const std::string& name, const Counters& delta,
                                     mode_t mode, bool force_mode, LockWait wait) {
    auto stats = LockedStats::open(dir_fd, name, true, mode, force_mode, wait);
    if (!stats) return std::nullopt;
    Counters totals = stats->read();
    totals += delta;
    if (stats->write(totals) != 0) return std::nullopt;
    return totals;
}

Counters read_counters(int dir_fd, const std::string& name) {
    UniqueFd fd = open_at(dir_fd, name, kReadFlags);
    struct stat st;
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
    // A shared lock keeps a half-written file out of view; if it stays busy, read anyway.
    lock(fd.get(), LOCK_SH, LockWait::brief);
    return parse_counters(read_text(fd.get()));
}

bool zero_counter_file(int dir_fd, const std::string& name, mode_t mode, bool force_mode) {
    auto file = LockedStats::open(dir_fd, name, false, mode, force_mode, LockWait::patient);
    if (!file) return errno == ENOENT;
    std::string zeroed;
    for_each_counter_line(file->text(), [&](std::string_view counter, std::uint64_t) {
        zeroed.append(counter.data(), counter.size());
        zeroed += " 0\n";
    });
    return file->write_text(zeroed) == 0;
}

} // namespace kiln::cache::detail
