#pragma once
// Shared helpers for the cache tests: deterministic keys and entries, a store per directory,
// file-time and fork helpers.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/store.hpp"
#include "temp_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kiln::test {

inline cache::Key key_of(const std::string& name) {
    return cache::KeyBuilder().add("test-key", name).finish();
}

/// A key whose entry lands in shard @p shard (its first byte).
inline cache::Key key_in_shard(int shard, const std::string& name) {
    cache::Key key = key_of(name);
    key.bytes[0] = static_cast<std::uint8_t>(shard);
    return key;
}

/// Payload bytes that depend on the key, so a reader can tell whose entry it got.
inline std::string payload_for(const cache::Key& key, std::size_t size) {
    std::string payload(size, '\0');
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    for (auto byte : key.bytes)
        state = (state ^ byte) * 0x100000001b3ull;
    for (std::size_t i = 0; i < size; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        payload[i] = static_cast<char>(state >> 56);
    }
    return payload;
}

inline cache::Entry make_entry(const cache::Key& key, std::size_t payload_size = 512) {
    cache::Entry entry;
    entry.key = key;
    entry.payload = payload_for(key, payload_size);
    entry.lowered_names = {{"add<float>", "_Z3addIfEvPT_"}, {"scale", "_Z5scalePf"}};
    entry.nvrtc_version = "13.0.88";
    entry.arch = "sm_90";
    entry.compile_ms = 12.5;
    entry.log = "warning: a test log";
    return entry;
}

/// An entry whose payload and recipe compress well, as a real cubin and Kiln's headers do.
inline cache::Entry make_compressible_entry(const cache::Key& key) {
    cache::Entry entry = make_entry(key, 256);
    entry.payload += std::string(6000, '\0');
    cache::Recipe recipe;
    recipe.source = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2; }\n";
    std::string header;
    for (int i = 0; i < 200; ++i)
        header += "template <class T> __device__ T twice_" + std::to_string(i % 10) +
                  "(T x) { return x + x; }\n";
    recipe.headers = {{"kiln/twice.cuh", header}};
    entry.recipe = recipe;
    return entry;
}

/// @p entry encoded uncompressed, as a Kiln before compression wrote it.
inline std::string encode_uncompressed(cache::Entry entry) {
    entry.compression = cache::Compression::none;
    return cache::encode_entry(entry);
}

inline cache::Config config_for(const std::filesystem::path& dir) {
    cache::Config config;
    config.dir = dir;
    return config;
}

/// A store configuration that also saves sources.
inline cache::Config with_sources(const std::filesystem::path& dir) {
    cache::Config config = config_for(dir);
    config.save_source = true;
    return config;
}

/// Permission bits (with setgid and sticky) of @p path itself, not what a link points to.
inline mode_t mode_of(const std::filesystem::path& path) {
    struct stat st {};
    ::lstat(path.c_str(), &st);
    return st.st_mode & 07777;
}

inline std::filesystem::path entry_file(const std::filesystem::path& dir, const cache::Key& key) {
    const std::string hex = key.hex();
    return dir / hex.substr(0, 2) / (hex + ".kiln");
}

/// Set a file's modification time to @p seconds since the epoch.
inline void set_mtime(const std::filesystem::path& path, std::time_t seconds) {
    timespec times[2] = {{seconds, 0}, {seconds, 0}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
}

inline std::time_t mtime_of(const std::filesystem::path& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st.st_mtim.tv_sec;
}

/// Run @p body in a forked child; its return value is the child's exit code.
inline pid_t spawn(const std::function<int()>& body) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        int code = 3;
        try {
            code = body();
        } catch (...) {
            code = 4;
        }
        ::_exit(code);
    }
    return pid;
}

/// Wait for a child; its exit code, or 128 + signal when a signal ended it.
inline int wait_for(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return -1;
}

/// A child that should end at once but might block (a lock waited for, a FIFO opened) calls
/// ::alarm(kWatchdogSeconds) first: a regression then fails the test instead of hanging it.
inline constexpr unsigned kWatchdogSeconds = 120;

/// Holds flock(LOCK_EX) on a file through an open file description of its own, as another process
/// that never lets go would, until destroyed. flock() locks of different descriptions conflict in
/// one process too, and a forked child shares this one without taking the lock.
class HeldLock {
  public:
    explicit HeldLock(const std::filesystem::path& path)
        : m_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        m_held = m_fd >= 0 && ::flock(m_fd, LOCK_EX | LOCK_NB) == 0;
    }
    ~HeldLock() {
        if (m_fd >= 0) ::close(m_fd);
    }
    HeldLock(const HeldLock&) = delete;
    HeldLock& operator=(const HeldLock&) = delete;
    bool held() const { return m_held; }

  private:
    int m_fd;
    bool m_held = false;
};

/// Run a process that takes the compile claim of @p key in a store of @p config and is killed
/// (SIGKILL) while it holds it, as a compile killed midway. True when it held the claim and died
/// of the signal.
inline bool kill_a_claim_holder(const cache::Config& config, const cache::Key& key) {
    const pid_t child = spawn([&] {
        cache::Store store(config);
        const cache::ClaimedLoad got = store.load_or_claim(key);
        if (!got.claim.held()) return 1;
        ::kill(::getpid(), SIGKILL);
        return 0;
    });
    return wait_for(child) == 128 + SIGKILL;
}

/// The files in @p dir at the names of counts left beside the counter file @p name (`stats`,
/// `usage`, `remote-stats`) while another process held its lock.
inline std::vector<std::string> spill_files(const std::filesystem::path& dir,
                                            const std::string& name) {
    const std::string prefix = "." + name + "-pending.";
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& item : std::filesystem::directory_iterator(dir, ec)) {
        const std::string file = item.path().filename().string();
        if (file.compare(0, prefix.size(), prefix) == 0) names.push_back(file);
    }
    return names;
}

} // namespace kiln::test
