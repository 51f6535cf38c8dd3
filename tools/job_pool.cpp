#include "job_pool.hpp"

#include "progress.hpp"

#include "kiln/compiler.hpp"
#include "kiln/error.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <exception>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

namespace kiln::tools {

namespace {

// What the workers share: in memory mapped MAP_SHARED before the fork, so worker processes
// update it as threads would. Lock-free atomics of these sizes work across processes.
struct Shared {
    pthread_mutex_t output; // process-shared and robust: a dead worker does not block the others
    std::atomic<std::size_t> next{0}, hits{0}, misses{0}, errors{0};
    std::atomic<std::uint64_t> compiles{0};
    std::atomic<unsigned char> failed[1]; // failure_slots of them, from here on
};

static_assert(std::atomic<std::size_t>::is_always_lock_free, "atomics must work across processes");

class SharedOutput final : public JobOutput {
  public:
    SharedOutput(Shared& shared, std::size_t slots, bool progress, int records_fd)
        : m_shared(shared)
        , m_slots(slots)
        , m_progress(progress)
        , m_records_fd(records_fd) {}
    void print(const std::string& text) override {
        // Above the progress line: erased here, redrawn by its next tick.
        write(m_progress ? kEraseLine + text : text);
    }
    bool first_failure(std::size_t slot) override {
        return slot < m_slots && m_shared.failed[slot].exchange(1) == 0;
    }
    void record(const std::string& line) override {
        Locked locked(m_shared.output);
        const std::string text = line + "\n";
        // The file's offset is shared with every worker process: under the lock, appends.
        for (std::size_t at = 0; at < text.size() && m_records_fd >= 0;) {
            const ssize_t n = ::write(m_records_fd, text.data() + at, text.size() - at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            at += static_cast<std::size_t>(n);
        }
    }
    // @p text on stderr whole, under the lock every worker's output takes.
    void write(const std::string& text) {
        Locked locked(m_shared.output);
        std::fwrite(text.data(), 1, text.size(), stderr);
        std::fflush(stderr);
    }

  private:
    // The process-shared, robust output lock, held for a scope.
    class Locked {
      public:
        explicit Locked(pthread_mutex_t& mutex)
            : m_mutex(mutex)
            , m_result(pthread_mutex_lock(&mutex)) {
            if (m_result == EOWNERDEAD) pthread_mutex_consistent(&m_mutex);
        }
        ~Locked() {
            if (m_result == 0 || m_result == EOWNERDEAD) pthread_mutex_unlock(&m_mutex);
        }
        Locked(const Locked&) = delete;
        Locked& operator=(const Locked&) = delete;

      private:
        pthread_mutex_t& m_mutex;
        int m_result;
    };

    Shared& m_shared;
    std::size_t m_slots;
    bool m_progress;
    int m_records_fd;
};

// An unnamed temporary file for the jobs' records, shared with the worker processes.
class RecordsFile {
  public:
    RecordsFile()
        : m_file(std::tmpfile()) {}
    ~RecordsFile() {
        if (m_file) std::fclose(m_file);
    }
    RecordsFile(const RecordsFile&) = delete;
    RecordsFile& operator=(const RecordsFile&) = delete;
    int fd() const { return m_file ? ::fileno(m_file) : -1; }
    // Every line written, in order.
    std::vector<std::string> lines() const {
        std::vector<std::string> lines;
        if (!m_file) return lines;
        std::string text, chunk(1 << 16, '\0');
        for (off_t at = 0;;) {
            const ssize_t n = ::pread(fd(), chunk.data(), chunk.size(), at);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            text.append(chunk.data(), static_cast<std::size_t>(n));
            at += n;
        }
        for (std::size_t start = 0, end; (end = text.find('\n', start)) != std::string::npos;
             start = end + 1)
            lines.push_back(text.substr(start, end - start));
        return lines;
    }

  private:
    std::FILE* m_file;
};

// The block of shared memory, unmapped when the run ends.
class SharedBlock {
  public:
    explicit SharedBlock(std::size_t slots, bool across_processes)
        : m_size(sizeof(Shared) + slots) {
        void* memory =
            ::mmap(nullptr, m_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (memory == MAP_FAILED)
            throw Error(std::string("cannot map memory for the warm-up's workers: ") +
                        std::strerror(errno));
        m_shared = new (memory) Shared; // the zeroed mapping holds zeroed failure flags
        pthread_mutexattr_t attributes;
        pthread_mutexattr_init(&attributes);
        if (across_processes) {
            pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
            pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
        }
        pthread_mutex_init(&m_shared->output, &attributes);
        pthread_mutexattr_destroy(&attributes);
    }
    ~SharedBlock() {
        pthread_mutex_destroy(&m_shared->output);
        ::munmap(m_shared, m_size);
    }
    SharedBlock(const SharedBlock&) = delete;
    SharedBlock& operator=(const SharedBlock&) = delete;
    Shared& get() const { return *m_shared; }

  private:
    std::size_t m_size;
    Shared* m_shared = nullptr;
};

// Threads in this process: forking is only safe with one (the child would inherit held locks).
std::size_t thread_count() {
    std::size_t count = 0;
    if (DIR* tasks = ::opendir("/proc/self/task")) {
        while (const dirent* item = ::readdir(tasks))
            count += item->d_name[0] != '.';
        ::closedir(tasks);
    }
    return count;
}

void work(Shared& shared, SharedOutput& output, std::size_t total,
          const std::function<JobOutcome(std::size_t, JobOutput&)>& run) {
    for (std::size_t job; (job = shared.next++) < total;) {
        JobOutcome outcome = JobOutcome::error;
        try {
            outcome = run(job, output);
        } catch (const std::exception& e) {
            output.print("job " + std::to_string(job) + ": " + e.what() + "\n");
        }
        (outcome == JobOutcome::hit    ? shared.hits
         : outcome == JobOutcome::miss ? shared.misses
                                       : shared.errors)++;
    }
}

} // namespace

JobTotals run_jobs(std::size_t total, unsigned workers, std::size_t failure_slots, bool progress,
                   bool threads,
                   const std::function<JobOutcome(std::size_t job, JobOutput& output)>& run,
                   const std::function<void()>& worker_done) {
    JobTotals totals;
    totals.workers = std::max(1u, workers);
    totals.processes = !threads && totals.workers > 1 && thread_count() == 1;
    SharedBlock block(failure_slots, totals.processes);
    Shared& shared = block.get();
    const RecordsFile records;
    SharedOutput output(shared, failure_slots, progress, records.fd());
    const std::uint64_t compiles_before = Compiler::global().statistics().compiles;
    // Drawn by this process alone, from the counters the workers share; its thread starts after
    // the forks.
    ProgressLine line(
        progress,
        [&] {
            ProgressCounts counts;
            counts.hits = shared.hits;
            counts.compiles = shared.misses;
            counts.failures = shared.errors;
            counts.done = counts.hits + counts.compiles + counts.failures;
            counts.total = total;
            return counts;
        },
        [&](const std::string& text) { output.write(text); });

    if (!totals.processes) {
        line.start();
        std::vector<std::thread> pool;
        for (unsigned t = 1; t < totals.workers; ++t)
            pool.emplace_back([&] { work(shared, output, total, run); });
        work(shared, output, total, run);
        for (auto& thread : pool)
            thread.join();
        shared.compiles += Compiler::global().statistics().compiles - compiles_before;
    } else {
        std::fflush(nullptr); // what is buffered is printed once, not once per worker
        std::vector<pid_t> children;
        const pid_t parent = ::getpid();
        for (unsigned w = 0; w < totals.workers; ++w) {
            const pid_t pid = ::fork();
            if (pid == 0) {
                // A worker dies with `kiln warm`, however it ends (SIGKILL, SIGTERM, a crash):
                // no orphan goes on compiling the rest of the manifest. Checked once more after
                // asking, in case the parent died in between.
                ::prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (::getppid() != parent) ::_exit(1);
                int status = 0;
                try {
                    work(shared, output, total, run);
                    shared.compiles += Compiler::global().statistics().compiles - compiles_before;
                    if (worker_done) worker_done();
                } catch (...) {
                    status = 1;
                }
                std::fflush(nullptr);
                std::exit(status); // static destructors write the store's deferred counters
            }
            if (pid < 0) {
                output.print(std::string("cannot start a worker process (") + std::strerror(errno) +
                             "); continuing with " + std::to_string(children.size()) + "\n");
                break;
            }
            children.push_back(pid);
        }
        line.start();
        if (children.empty()) // not one process: this one does the work
            work(shared, output, total, run);
        for (pid_t child : children) {
            int status = 0;
            while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
            }
            if (WIFSIGNALED(status))
                output.print("a warm-up worker process (pid " + std::to_string(child) +
                             ") was killed by signal " + std::to_string(WTERMSIG(status)) + "\n");
        }
        // Jobs a dead worker had taken and not finished are errors.
        const std::size_t done = shared.hits + shared.misses + shared.errors;
        if (done < total) {
            output.print(std::to_string(total - done) +
                         " compile(s) were lost with a worker process; run the warm-up again\n");
            shared.errors += total - done;
        }
    }
    line.finish();
    totals.records = records.lines();
    totals.hits = shared.hits;
    totals.misses = shared.misses;
    totals.errors = shared.errors;
    totals.compiles = shared.compiles;
    for (std::size_t slot = 0; slot < failure_slots; ++slot)
        totals.failed_slots += shared.failed[slot] != 0;
    return totals;
}

} // namespace kiln::tools
