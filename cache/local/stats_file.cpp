#include "stats_file.hpp"

#include "fs.hpp"
#include "layout.hpp"
#include "warn.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <utility>

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
// shard (a few dozen files), so a short wait suffices; past it the caller keeps or spills the
// update. Brief is a few milliseconds: a holder that keeps the lock longer (a member of a shared
// cache can hold it for good) must not make every update wait.
bool lock(int fd, int operation, LockWait wait) {
    const int attempts = wait == LockWait::none ? 1 : wait == LockWait::brief ? 16 : 4000;
    for (int i = 0;; ++i) {
        if (::flock(fd, operation | LOCK_NB) == 0) return true;
        if (errno != EWOULDBLOCK && errno != EINTR) return false;
        if (i + 1 >= attempts) break;
        std::this_thread::sleep_for(std::chrono::microseconds(250));
    }
    errno = EWOULDBLOCK;
    return false;
}

// A spill's last line: a spill without it is still being written (or its writer died).
constexpr std::string_view kSpillEnd = "end\n";

// `.<name>-pending`: the marker. Spills are `.<name>-pending.<16 hex digits>`.
std::string marker_name(std::string_view name) {
    return "." + std::string(name) + "-pending";
}

// Leave the marker (anything at its name will do: the next holder removes whatever is there).
void mark(int dir_fd, const std::string& name, mode_t mode, bool force_mode) {
    UniqueFd fd =
        open_at(dir_fd, marker_name(name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    if (fd && force_mode) ::fchmod(fd.get(), mode);
}

// 64 bits no other process can guess: getrandom() each time, so forked processes differ too.
std::uint64_t random_bits() {
    std::uint64_t bits = 0;
    if (::getrandom(&bits, sizeof bits, 0) == static_cast<ssize_t>(sizeof bits)) return bits;
    thread_local std::mt19937_64 generator{std::random_device{}()};
    return generator() ^ static_cast<std::uint64_t>(::getpid());
}

void warn_untrusted_spill(const std::string& file, const std::string& why) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        warn("kernel cache: '" + file +
             "', at the name of counts left for a locked counter file, was not such a file of "
             "this cache (" +
             why +
             "): it was removed unread. Further ones are not reported; `kiln cache verify` lists "
             "them.");
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

std::string format_counter_delta(const Counters& delta) {
    std::string text;
    for (const StatsField& field : kStatsFields) {
        const std::string value = field.unsigned_member
                                      ? std::to_string(delta.*field.unsigned_member)
                                      : std::to_string(delta.*field.signed_member);
        if (value == "0") continue;
        text += field.name;
        text += ' ';
        text += value;
        text += '\n';
    }
    return text;
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

std::string add_counter_lines(std::string_view text, std::string_view delta) {
    std::vector<std::pair<std::string, std::uint64_t>> sums;
    const auto add = [&](std::string_view name, std::uint64_t value) {
        for (auto& [known, sum] : sums)
            if (known == name) {
                sum += value;
                return;
            }
        sums.emplace_back(std::string(name), value);
    };
    for_each_counter_line(text, add);
    for_each_counter_line(delta, add);
    std::string sum_text;
    for (const auto& [name, sum] : sums)
        sum_text += name + ' ' + std::to_string(static_cast<std::int64_t>(sum)) + '\n';
    return sum_text;
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

bool is_spill_name(std::string_view file, std::string_view name) {
    const std::string prefix = marker_name(name) + '.';
    return file.size() > prefix.size() && file.substr(0, prefix.size()) == prefix;
}

std::vector<std::string> list_spills(int dir_fd, std::string_view name, std::size_t limit) {
    std::vector<std::string> names;
    // fdopendir takes ownership of its descriptor: give it a duplicate. Names only: a spill is
    // checked on the descriptor it is read through.
    const int own = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (own < 0) return names;
    DIR* handle = ::fdopendir(own);
    if (!handle) {
        ::close(own);
        return names;
    }
    ::rewinddir(handle);
    while (names.size() < limit)
        if (const dirent* item = ::readdir(handle)) {
            if (is_spill_name(item->d_name, name)) names.emplace_back(item->d_name);
        } else {
            break;
        }
    ::closedir(handle);
    return names;
}

SpillCheck check_spill(int dir_fd, const std::string& file, bool shared) {
    SpillCheck check;
    const auto untrusted = [&](const char* why) {
        check.kind = SpillCheck::untrusted;
        check.text = why;
        return check;
    };
    struct stat st {};
    if (::fstatat(dir_fd, file.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return check;
    if (S_ISLNK(st.st_mode)) return untrusted("a symbolic link");
    if (S_ISDIR(st.st_mode)) return untrusted("a directory");
    if (!S_ISREG(st.st_mode)) return untrusted("not a regular file");
    // Checked again on the descriptor it is read through: a file swapped in meanwhile is what
    // the checks see. O_NONBLOCK: a FIFO swapped in cannot block the open.
    UniqueFd fd = open_at(dir_fd, file, kReadFlags);
    if (!fd) return errno == ENOENT ? check : untrusted("it cannot be opened");
    struct stat dir {};
    if (::fstat(fd.get(), &st) != 0 || ::fstat(dir_fd, &dir) != 0)
        return untrusted("it cannot be examined");
    if (!S_ISREG(st.st_mode)) return untrusted("not a regular file");
    if (st.st_nlink != 1) return untrusted("a hard link to a file elsewhere");
    if (st.st_mode & S_IWOTH) return untrusted("writable by every user");
    if (!shared && st.st_uid != ::geteuid()) return untrusted("owned by another user");
    if (shared && st.st_gid != dir.st_gid) return untrusted("not of the directory's group");
    if (st.st_size > 4096) return untrusted("larger than 4 KiB");
    std::string text;
    if (read_all(fd.get(), 4096, text) != 0) return untrusted("it cannot be read");
    const bool finished =
        text.size() >= kSpillEnd.size() &&
        text.compare(text.size() - kSpillEnd.size(), kSpillEnd.size(), kSpillEnd) == 0 &&
        (text.size() == kSpillEnd.size() || text[text.size() - kSpillEnd.size() - 1] == '\n');
    if (!finished) {
        const std::int64_t mtime =
            std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
        check.kind =
            mtime < now_ns() - kStaleSpillAgeNs ? SpillCheck::stale : SpillCheck::unfinished;
        return check;
    }
    check.kind = SpillCheck::counts;
    check.text = std::move(text);
    return check;
}

int write_spill(int dir_fd, const std::string& name, std::string_view delta, mode_t mode,
                bool force_mode) {
    // Bounded: a lock held for good must not fill the directory with spills.
    if (list_spills(dir_fd, name, kMaxSpillsKept).size() >= kMaxSpillsKept) return EDQUOT;
    std::string spill;
    UniqueFd fd;
    for (int attempt = 0; attempt < 4 && !fd; ++attempt) {
        char suffix[20];
        std::snprintf(suffix, sizeof suffix, "%016llx",
                      static_cast<unsigned long long>(random_bits()));
        spill = marker_name(name) + '.' + suffix;
        // A new file of its own, whatever another member planted: nothing is followed or reused.
        fd = open_at(dir_fd, spill, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
        if (!fd && errno != EEXIST) return errno;
    }
    if (!fd) return EEXIST;
    int error = force_mode && ::fchmod(fd.get(), mode) != 0 ? errno : 0;
    if (error == 0) error = write_all(fd.get(), std::string(delta) + std::string(kSpillEnd));
    if (error == 0) error = fd.close();
    if (error != 0) {
        ::unlinkat(dir_fd, spill.c_str(), 0);
        return error;
    }
    // After the spill is whole: a holder that removes the marker before it lists the spills then
    // either sees this one or finds the marker again.
    mark(dir_fd, name, mode, force_mode);
    return 0;
}

void warn_counts_lost(const std::string& file, int error) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true))
        warn("kernel cache: counts for " + file +
             " are not written: another process holds its lock, and they could not be left "
             "beside it (" +
             (error == EDQUOT ? std::string("too many are waiting there already")
                              : std::string(std::strerror(error))) +
             "); a process that ends now loses them. Further such failures are not reported.");
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
    LockedStats stats(std::move(fd), dir_fd, name, mode, force_mode);
    stats.read_spills(true);
    return stats;
}

LockedStats::~LockedStats() {
    if (m_fd && !m_spills.empty()) mark(m_dir, m_name, m_mode, m_shared);
}

void LockedStats::gather_spills() {
    read_spills(false);
}

void LockedStats::read_spills(bool marked_only) {
    const std::string marker = marker_name(m_name);
    struct stat st;
    if (marked_only && ::fstatat(m_dir, marker.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    // The marker goes before the listing: a spill finished after it marks itself again.
    remove_at(m_dir, marker);
    std::vector<std::string> names = list_spills(m_dir, m_name, kMaxSpillsMerged + 1);
    const bool more = names.size() > kMaxSpillsMerged;
    if (more) names.pop_back();
    for (const std::string& file : names) {
        if (std::find(m_spills.begin(), m_spills.end(), file) != m_spills.end()) continue;
        SpillCheck check = check_spill(m_dir, file, m_shared);
        switch (check.kind) {
        case SpillCheck::counts:
            m_spilled = add_counter_lines(m_spilled, check.text);
            m_spills.push_back(file);
            break;
        case SpillCheck::untrusted:
            // Removing a name never touches what it links to.
            remove_at(m_dir, file);
            warn_untrusted_spill(file, check.text);
            break;
        case SpillCheck::stale:
            ::unlinkat(m_dir, file.c_str(), 0);
            break;
        case SpillCheck::unfinished: // its writer marks it when it is whole
        case SpillCheck::gone:
            break;
        }
    }
    // The rest wait for the next holders.
    if (more) mark(m_dir, m_name, m_mode, m_shared);
}

void LockedStats::discard_spills() {
    for (const std::string& file : m_spills)
        ::unlinkat(m_dir, file.c_str(), 0);
    m_spills.clear();
    m_spilled.clear();
    remove_at(m_dir, marker_name(m_name));
    for (const std::string& file : list_spills(m_dir, m_name, kMaxSpillsKept * 16))
        remove_at(m_dir, file);
}

bool LockedStats::fresh() const {
    struct stat st;
    return ::fstat(m_fd.get(), &st) == 0 && st.st_size == 0;
}

Counters LockedStats::read() const {
    return parse_counters(text());
}

std::string LockedStats::text() const {
    std::string text = read_text(m_fd.get());
    return m_spills.empty() ? text : add_counter_lines(text, m_spilled);
}

int LockedStats::write(const Counters& counters) {
    return write_text(format_counters(counters));
}

int LockedStats::write_text(std::string_view text) {
    // In place under the lock: one small pwrite, then drop any longer old tail.
    const ssize_t n = ::pwrite(m_fd.get(), text.data(), text.size(), 0);
    if (n < 0) return errno;
    if (static_cast<std::size_t>(n) != text.size()) return EIO;
    if (::ftruncate(m_fd.get(), static_cast<off_t>(text.size())) != 0) return errno;
    // Their counts are in the file now. A process killed just before this counts them twice,
    // which an estimate can bear better than losing them.
    for (const std::string& file : m_spills)
        ::unlinkat(m_dir, file.c_str(), 0);
    m_spills.clear();
    m_spilled.clear();
    return 0;
}

std::optional<Counters> add_counters(int dir_fd, const std::string& name, const Counters& delta,
                                     mode_t mode, bool force_mode, LockWait wait) {
    Counters totals;
    int error = 0;
    {
        auto stats = LockedStats::open(dir_fd, name, true, mode, force_mode, wait);
        if (!stats) return std::nullopt;
        totals = stats->read();
        totals += delta;
        error = stats->write(totals);
    }
    if (error == 0) return totals;
    errno = error; // not EWOULDBLOCK: the caller keeps the delta
    return std::nullopt;
}

std::string read_counter_text(int dir_fd, const std::string& name, bool shared) {
    std::string text;
    UniqueFd fd = open_at(dir_fd, name, kReadFlags);
    struct stat st;
    if (fd && ::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode)) {
        // A shared lock keeps a half-written file out of view, and a holder's spills, read and
        // not yet removed, too; if it stays busy, read anyway.
        lock(fd.get(), LOCK_SH, LockWait::brief);
        text = read_text(fd.get());
    }
    // Counts left beside it are counts: shown, so that none is lost from view.
    for (const std::string& file : list_spills(dir_fd, name, kMaxSpillsKept)) {
        SpillCheck check = check_spill(dir_fd, file, shared);
        if (check.kind == SpillCheck::counts) text = add_counter_lines(text, check.text);
    }
    return text;
}

Counters read_counters(int dir_fd, const std::string& name, bool shared) {
    return parse_counters(read_counter_text(dir_fd, name, shared));
}

int zero_counter_file(int dir_fd, const std::string& name, mode_t mode, bool force_mode,
                      LockWait wait) {
    auto file = LockedStats::open(dir_fd, name, false, mode, force_mode, wait);
    if (!file) {
        const int error = errno;
        if (error != ENOENT) return error;
        // No file, but counts may wait beside it for one.
        remove_at(dir_fd, marker_name(name));
        for (const std::string& spill : list_spills(dir_fd, name, kMaxSpillsKept * 16))
            remove_at(dir_fd, spill);
        return 0;
    }
    std::string zeroed;
    for_each_counter_line(file->text(), [&](std::string_view counter, std::uint64_t) {
        zeroed.append(counter.data(), counter.size());
        zeroed += " 0\n";
    });
    file->discard_spills();
    return file->write_text(zeroed);
}

} // namespace kiln::cache::detail
