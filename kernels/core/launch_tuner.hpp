#pragma once
// The launch tuner's core, shared by the generated-kernel front ends (kiln/tuning.hpp says what it
// promises): the candidates' timing with CUDA events, the choice of the fastest, the persistent
// key and the record it stores through cache::TuningStore, scratch copies for candidate runs, and
// the per-context table that makes a tuned call cost one lookup. A front end adds only what is its
// own: which launch configurations keep its results, and how to run one.

#include "driver/per_context_cache.hpp"
#include "driver/stream_capture.hpp"
#include "kiln/array.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/tuning_store.hpp"
#include "kiln/error.hpp"
#include "kiln/stream.hpp"
#include "operands.hpp"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// A launch configuration the tuner may choose: a block size, and how many waves of resident
/// blocks a grid-stride loop's grid is capped at (0: the grid the front end sizes).
struct LaunchChoice {
    std::uint16_t block = 0;
    std::uint16_t waves = 0;
    bool operator==(const LaunchChoice& o) const noexcept {
        return block == o.block && waves == o.waves;
    }
    bool operator!=(const LaunchChoice& o) const noexcept { return !(*this == o); }
};

/// What a tuned call applies: the choice, and its grid cap in blocks on this device (0: none).
struct TunedLaunch {
    LaunchChoice choice;
    std::uint32_t max_grid = 0;
};

/// One candidate's time per launch in milliseconds; infinity or NaN when it failed.
struct TimedCandidate {
    LaunchChoice choice;
    double ms = 0;
};

/// Whether this thread is inside a TuningScope. A thread-local load.
bool tuning_scope_active() noexcept;

/// Whether a call is tuned: asked for by the kernel, the call or a scope.
inline bool tuning_requested(bool by_kernel, bool by_call) noexcept {
    return by_kernel || by_call || tuning_scope_active();
}

/// The index of the candidate to keep: the fastest, unless the first (the default configuration)
/// is within @p tolerance of it (a relative margin, so timing noise does not move a choice).
/// Failed candidates (not finite, or negative) never win; nullopt when none succeeded.
std::optional<std::size_t> select_fastest(const std::vector<TimedCandidate>& timed,
                                          double tolerance = 0.03);

/// The size class of @p n elements: its bit length (0 for 0, 1 for 1, 11 for 1024...), so sizes
/// within a factor of two share a choice.
std::uint32_t size_class(std::int64_t n) noexcept;

/// The persistent key of a tuning: the front end, the kernel's generated source for the default
/// configuration and its NVRTC options (which decide the code), the shape class (@p shape_class,
/// the front end's words), the device's name and compute capability.
cache::Key tuning_key(std::string_view front_end, std::string_view source,
                      const std::vector<std::string>& options, std::string_view shape_class,
                      std::string_view device_name, int cc_major, int cc_minor);

/// A record's payload for @p choice, with the times measured (for people reading it).
std::string encode_choice(const LaunchChoice& choice, double default_ms, double chosen_ms);
/// The choice in @p payload; nullopt when it does not parse.
std::optional<LaunchChoice> decode_choice(std::string_view payload);

/// The choice stored under @p key in @p store, accepted only when it is one of @p candidates (a
/// record could be planted: only a configuration the tuner itself would time is used). Counts a
/// disk hit, or a rejection for a record found but not used.
std::optional<LaunchChoice> load_choice(const cache::TuningStore& store, const cache::Key& key,
                                        const std::vector<LaunchChoice>& candidates);
/// Store @p choice under @p key (best effort); counts a store.
void store_choice(const cache::TuningStore& store, const cache::Key& key,
                  const LaunchChoice& choice, double default_ms, double chosen_ms);

/// The process's tuning store, over cache::Store::global()'s configuration.
const cache::TuningStore& tuning_store();

/// Times each candidate on @p stream with events: @p run(choice) queues one launch. A warm-up run
/// first (which also compiles), then a few batches; a candidate whose run throws is timed as
/// infinity. Counts a tuning and the candidates. Blocks until the runs are done.
std::vector<TimedCandidate> time_candidates(const std::vector<LaunchChoice>& candidates,
                                            StreamRef stream,
                                            const std::function<void(const LaunchChoice&)>& run);

/// Time, choose and store: the whole of a tuning once the front end knows its candidates (the
/// first is its default) and how to run one. Returns the choice (the default when every candidate
/// failed, which is not stored).
LaunchChoice tune_and_store(const std::vector<LaunchChoice>& candidates, const cache::Key& key,
                            StreamRef stream, const std::function<void(const LaunchChoice&)>& run);

/// Thrown by tune_launch() while its stream is captured into a graph (candidate runs and scratch
/// copies would be captured too): the front end launches that call untuned, and a later call of
/// the shape class tunes.
struct TuningDeferred {};

/// Counts a call that asked for tuning and could not have it.
void count_tuning_skipped() noexcept;

/// An array of @p output's shape, dtype and strides over fresh memory that holds a copy of the
/// bytes @p output spans (so a kernel that reads its outputs reads the same values), queued on
/// @p stream. Candidate runs write it instead of the caller's array.
/// @throws CudaError (out of memory included).
Array scratch_copy(const Array& output, StreamRef stream);

/// The grid cap of @p waves waves of blocks of a kernel with @p blocks_per_multiprocessor resident
/// blocks per multiprocessor on @p multiprocessors; 0 (none) for 0 waves.
std::uint32_t grid_cap(int waves, int multiprocessors, int blocks_per_multiprocessor) noexcept;

/// Block sizes a front end may try: @p default_block first, then the powers of two from
/// @p min_block to @p max_block (at most 1024) other than it.
std::vector<int> block_candidates(int default_block, int min_block, int max_block);

/// Replaces, in @p ops, every output and every raw input (which an operation may write) by a
/// scratch_copy(): candidate runs then write none of the caller's arrays.
/// @throws CudaError (out of memory included).
void use_scratch_arrays(Operands& ops, StreamRef stream);

/// A front end's tuned launches: one TunedLaunch per context and tuning key (a plan and shape
/// class), lock-free to read after its first call.
template <class Key, class Hash> using TunedLaunches = PerContextCache<TunedLaunch, Key, Hash>;

/// The tuning of one shape class for a front end whose call state is a @p PlannedCall `p` (with an
/// `ops` member): the choice stored under @p key when there is a valid one, else every candidate
/// timed on scratch arrays and the fastest stored. @p candidates come first with the default.
/// @p ready(choice, q) sets up the copy `q` of `p` for @p choice and returns a pointer to what
/// @p launch(q, *pointer) launches, and the grid cap in blocks (0: none). A candidate that cannot
/// be set up (a compile error, a block the kernel cannot have) is left out; when no candidate is
/// left, or the scratch arrays cannot be made, the default is kept without storing anything.
/// @throws TuningDeferred while @p stream is being captured.
template <class PlannedCall, class Ready, class Launch>
TunedLaunch tune_launch(const PlannedCall& p, const std::vector<LaunchChoice>& candidates,
                        const cache::Key& key, StreamRef stream, Ready&& ready, Launch&& launch) {
    if (stream_capturing(stream)) throw TuningDeferred{};
    auto applied = [&](const LaunchChoice& choice) {
        PlannedCall q = p;
        return TunedLaunch{choice, ready(choice, q).second};
    };
    if (std::optional<LaunchChoice> stored = load_choice(tuning_store(), key, candidates)) {
        try {
            return applied(*stored);
        } catch (const Error&) { // it cannot be set up here after all: tune again
        }
    }
    using Target = decltype(ready(candidates.front(), std::declval<PlannedCall&>()).first);
    std::vector<PlannedCall> prepared;
    std::vector<Target> targets;
    std::vector<LaunchChoice> runnable;
    try {
        PlannedCall scratch = p;
        use_scratch_arrays(scratch.ops, stream);
        for (const LaunchChoice& choice : candidates) {
            PlannedCall q = scratch;
            try {
                const Target target = ready(choice, q).first;
                prepared.push_back(q);
                targets.push_back(target);
                runnable.push_back(choice);
            } catch (const Error&) {
            }
        }
    } catch (const Error&) { // no memory for the scratch arrays, or a view they cannot copy
        count_tuning_skipped();
        return TunedLaunch{candidates.front(), 0};
    }
    if (runnable.empty()) {
        count_tuning_skipped();
        return TunedLaunch{candidates.front(), 0};
    }
    const LaunchChoice chosen =
        tune_and_store(runnable, key, stream, [&](const LaunchChoice& choice) {
            const auto at = static_cast<std::size_t>(
                std::find(runnable.begin(), runnable.end(), choice) - runnable.begin());
            launch(prepared[at], *targets[at]);
        });
    return applied(chosen);
}

} // namespace kiln::detail
