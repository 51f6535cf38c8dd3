#pragma once
/// @file
/// The launch-configuration tuner (CuPy's `cupyx.optimizing.optimize`, made persistent). Asked for
/// per kernel (ElementwiseOptions::tune, ReductionOptions::tune), per call (CallOptions::tune,
/// ReduceCall::tune) or per scope (TuningScope), the first call for a kernel, a shape class and a
/// device times the launch configurations that cannot change its results (block sizes, and grids
/// for the kernels' grid-stride loops) with CUDA events, keeps the fastest, and stores the choice
/// in the cache directory (`<dir>/<ab>/<key>.tune`), so later processes, and other machines with
/// the same device, launch with it without timing anything. Later calls with that shape class cost
/// one hash lookup more than an untuned call.
///
/// A tuned launch gives bitwise what the untuned one gives: elementwise kernels compute each
/// element the same way whatever the block, and reductions are tuned only where the order in which
/// elements are combined stays the same (ReductionKernel's documentation says which). Candidate
/// runs write scratch copies of the outputs, never the caller's arrays; the call that tunes waits
/// for its candidates (a few milliseconds to a second, compiles of the candidate block sizes
/// included) and then launches as any other call. A kernel that reads `blockDim` or `gridDim`
/// itself (in a preamble or the operation) should not be tuned.

#include <cstdint>

namespace kiln {

/// While alive, every ElementwiseKernel and ReductionKernel call on this thread is tuned, as if it
/// asked for it. Scopes nest. Not movable: it belongs to the scope it is declared in.
///
/// ```cpp
/// {
///     kiln::TuningScope tune;
///     kernel(x, y, out); // tuned on first use of this shape class, then the stored choice
/// }
/// ```
class TuningScope {
  public:
    /// Start tuning the calls of this thread.
    TuningScope() noexcept;
    /// Stop, unless an enclosing scope is still alive.
    ~TuningScope();
    /// Not copyable.
    TuningScope(const TuningScope&) = delete;
    /// Not copyable.
    TuningScope& operator=(const TuningScope&) = delete;
};

/// What the tuner has done in this process: plain counters, read as one snapshot.
struct TuningStatistics {
    /// Shape classes timed (candidates run) in this process.
    std::uint64_t tunings = 0;
    /// Candidate launch configurations timed, over all tunings.
    std::uint64_t candidates_timed = 0;
    /// Choices read from the cache directory instead of timed.
    std::uint64_t disk_hits = 0;
    /// Choices written to the cache directory.
    std::uint64_t disk_stores = 0;
    /// Records found in the cache directory but not used: damaged, untrusted (a link, a file
    /// another user could have planted), or not a choice the tuner could have made. Each was then
    /// timed afresh.
    std::uint64_t rejected = 0;
    /// Shape classes that asked for tuning where it could not be done (the layout has no
    /// candidates, or scratch memory could not be had): their calls run with the default
    /// configuration, and nothing is stored. A call that gives its block size is never tuned and
    /// not counted here.
    std::uint64_t skipped = 0;
};

/// The counters so far (relaxed atomic loads).
/// @return a snapshot of the counters.
TuningStatistics tuning_statistics() noexcept;

} // namespace kiln
