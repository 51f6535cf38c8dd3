#pragma once
// The parallel part of `kiln warm`: jobs (compiles) handed out one at a time to workers.
//
// With more than one worker the workers are processes forked from this one, not threads: each
// has its own NVRTC and heap, so parallel compiles do not depend on how NVRTC scales with threads
// inside one process (issue 16 asks for 6x at -j 16 over -j 1 on 16 cores). The cache directory is
// safe for many processes, so each worker publishes its entries there itself. Forking needs a
// process with one thread (nothing has started one before the jobs: no compile has run); otherwise
// the workers are threads.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::tools {

/// How a job ended.
enum class JobOutcome { hit, miss, error };

/// What a job may use while it runs, whatever its worker is.
class JobOutput {
  public:
    virtual ~JobOutput() = default;
    /// Write @p text to stderr whole, never interleaved with another worker's.
    virtual void print(const std::string& text) = 0;
    /// Whether this is the first failure recorded for @p slot (below the run's slot count): the
    /// first one prints a kernel's full error, later ones (other architectures) one line.
    virtual bool first_failure(std::size_t slot) = 0;
    /// Keep @p line (one line, no newline in it) for the run's caller: JobTotals::records.
    virtual void record(const std::string& line) = 0;
};

/// The totals of a run.
struct JobTotals {
    std::size_t hits = 0, misses = 0, errors = 0;
    /// NVRTC compiles, summed over the workers (Compiler::global() statistics).
    std::uint64_t compiles = 0;
    /// How many failure slots recorded a failure (kernels that failed, for any architecture).
    std::size_t failed_slots = 0;
    /// The workers used, and whether they were processes.
    unsigned workers = 1;
    bool processes = false;
    /// What the jobs recorded (JobOutput::record()), one line each, in the order recorded.
    std::vector<std::string> records;
};

/// Run jobs 0 .. @p total - 1 on up to @p workers workers, each taking the next job when it is
/// done with one. @p run does one job; a job that throws counts as an error (its message printed).
/// @p failure_slots: how many first_failure() slots the jobs use. @p progress: keep a progress
/// line on stderr (progress.hpp), redrawn by this process; a job's message goes above it. @p
/// threads: use threads of this process even for several workers. A worker process calls @p
/// worker_done (e.g. to wait for its remote publishes) after its last job, then exits, which writes
/// its store's counters. A worker process that dies counts the job it had taken as an error, with a
/// message.
JobTotals run_jobs(std::size_t total, unsigned workers, std::size_t failure_slots, bool progress,
                   bool threads,
                   const std::function<JobOutcome(std::size_t job, JobOutput& output)>& run,
                   const std::function<void()>& worker_done = {});

} // namespace kiln::tools
