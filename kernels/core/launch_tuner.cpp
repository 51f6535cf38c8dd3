#include "launch_tuner.hpp"

#include "compile/tuning_records.hpp"
#include "driver/driver.hpp"
#include "kiln/error.hpp"
#include "kiln/event.hpp"
#include "kiln/memory.hpp"
#include "kiln/tuning.hpp"
#include "log_line.hpp"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

namespace kiln {

namespace {

thread_local int t_scope_depth = 0;

struct Counters {
    std::atomic<std::uint64_t> tunings{0}, candidates_timed{0}, disk_hits{0}, disk_stores{0},
        rejected{0}, skipped{0};
};

Counters& counters() {
    static Counters c;
    return c;
}

void bump(std::atomic<std::uint64_t>& counter, std::uint64_t by = 1) noexcept {
    counter.fetch_add(by, std::memory_order_relaxed);
}

// A candidate's batches aim at this much GPU time each, so short kernels are timed over many
// launches (event resolution is about half a microsecond) and long ones over few.
constexpr double kBatchMs = 0.25;
constexpr int kMaxBatchLaunches = 64;
constexpr int kBatches = 3;
constexpr int kMaxWaves = 64;

} // namespace

TuningScope::TuningScope() noexcept {
    ++t_scope_depth;
}
TuningScope::~TuningScope() {
    --t_scope_depth;
}

TuningStatistics tuning_statistics() noexcept {
    const Counters& c = counters();
    TuningStatistics s;
    s.tunings = c.tunings.load(std::memory_order_relaxed);
    s.candidates_timed = c.candidates_timed.load(std::memory_order_relaxed);
    s.disk_hits = c.disk_hits.load(std::memory_order_relaxed);
    s.disk_stores = c.disk_stores.load(std::memory_order_relaxed);
    s.rejected = c.rejected.load(std::memory_order_relaxed);
    s.skipped = c.skipped.load(std::memory_order_relaxed);
    return s;
}

namespace detail {

bool tuning_scope_active() noexcept {
    return t_scope_depth > 0;
}

std::optional<std::size_t> select_fastest(const std::vector<TimedCandidate>& timed,
                                          double tolerance) {
    auto usable = [](double ms) { return std::isfinite(ms) && ms >= 0; };
    std::optional<std::size_t> best;
    for (std::size_t k = 0; k < timed.size(); ++k)
        if (usable(timed[k].ms) && (!best || timed[k].ms < timed[*best].ms)) best = k;
    // The default stays unless another candidate is clearly faster: noise must not move choices.
    if (best && !timed.empty() && usable(timed[0].ms) &&
        timed[0].ms <= timed[*best].ms * (1 + tolerance))
        return std::size_t{0};
    return best;
}

std::uint32_t size_class(std::int64_t n) noexcept {
    std::uint32_t bits = 0;
    for (auto u = static_cast<std::uint64_t>(std::max<std::int64_t>(n, 0)); u; u >>= 1)
        ++bits;
    return bits;
}

cache::Key tuning_key(std::string_view front_end, std::string_view source,
                      const std::vector<std::string>& options, std::string_view shape_class,
                      std::string_view device_name, int cc_major, int cc_minor) {
    std::string joined; // NUL never occurs in an option
    for (const auto& option : options)
        joined.append(option).push_back('\0');
    cache::KeyBuilder builder;
    builder.add("kind", "kiln-launch-tuning")
        .add("tuning-version", std::uint64_t{1})
        .add("front-end", front_end)
        .add("source", source)
        .add("options", joined)
        .add("shape-class", shape_class)
        .add("device", device_name)
        .add("compute-capability",
             static_cast<std::uint64_t>(cc_major) * 10 + static_cast<std::uint64_t>(cc_minor));
    return builder.finish();
}

std::string encode_choice(const LaunchChoice& choice, double default_ms, double chosen_ms) {
    char times[96];
    std::snprintf(times, sizeof times, "default_ms=%.6f\nchosen_ms=%.6f\n", default_ms, chosen_ms);
    return "block=" + std::to_string(choice.block) + "\nwaves=" + std::to_string(choice.waves) +
           "\n" + times;
}

std::optional<LaunchChoice> decode_choice(std::string_view payload) {
    std::optional<int> block, waves;
    while (!payload.empty()) {
        const std::size_t end = std::min(payload.find('\n'), payload.size());
        const std::string_view line = payload.substr(0, end);
        payload.remove_prefix(std::min(end + 1, payload.size()));
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos) return std::nullopt;
        const std::string_view name = line.substr(0, eq), value = line.substr(eq + 1);
        std::optional<int>* field = name == "block" ? &block : name == "waves" ? &waves : nullptr;
        if (!field) continue; // times, for people
        int parsed = 0;
        const auto [ptr, error] =
            std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (error != std::errc() || ptr != value.data() + value.size() || field->has_value())
            return std::nullopt;
        *field = parsed;
    }
    if (!block || !waves || *block < 1 || *block > 1024 || *waves < 0 || *waves > kMaxWaves)
        return std::nullopt;
    return LaunchChoice{static_cast<std::uint16_t>(*block), static_cast<std::uint16_t>(*waves)};
}

std::optional<LaunchChoice> load_choice(const cache::TuningStore& store, const cache::Key& key,
                                        const std::vector<LaunchChoice>& candidates) {
    cache::TuningMiss why = cache::TuningMiss::absent;
    const std::optional<std::string> payload = store.load(key, &why);
    if (!payload) {
        if (why == cache::TuningMiss::damaged || why == cache::TuningMiss::untrusted) {
            bump(counters().rejected);
            kiln::detail::log_warn("the tuning record {} is {} and is ignored; it is tuned again",
                                   store.path(key).string(),
                                   why == cache::TuningMiss::damaged ? "damaged"
                                                                     : "not to be trusted");
        }
        return std::nullopt;
    }
    const std::optional<LaunchChoice> choice = decode_choice(*payload);
    if (!choice || std::find(candidates.begin(), candidates.end(), *choice) == candidates.end()) {
        bump(counters().rejected);
        kiln::detail::log_warn(
            "the tuning record {} holds no choice the tuner would make here; it is "
            "tuned again",
            store.path(key).string());
        return std::nullopt;
    }
    bump(counters().disk_hits);
    return choice;
}

void store_choice(const cache::TuningStore& store, const cache::Key& key,
                  const LaunchChoice& choice, double default_ms, double chosen_ms) {
    if (store.store(key, encode_choice(choice, default_ms, chosen_ms)))
        bump(counters().disk_stores);
}

const cache::TuningStore& tuning_store() {
    return tuning_records();
}

std::vector<TimedCandidate> time_candidates(const std::vector<LaunchChoice>& candidates,
                                            StreamRef stream,
                                            const std::function<void(const LaunchChoice&)>& run) {
    bump(counters().tunings);
    const Event start(true), end(true);
    auto timed_batch = [&](const LaunchChoice& choice, int launches) {
        start.record(stream);
        for (int k = 0; k < launches; ++k)
            run(choice);
        end.record(stream);
        end.synchronize();
        return static_cast<double>(elapsed_ms(start, end)) / launches;
    };
    std::vector<TimedCandidate> timed;
    timed.reserve(candidates.size());
    for (const LaunchChoice& choice : candidates) {
        double best = std::numeric_limits<double>::infinity();
        try {
            run(choice); // warm-up: compiles and loads the candidate's specialization
            const double once = timed_batch(choice, 1);
            const int launches =
                std::clamp(static_cast<int>(kBatchMs / std::max(once, 1e-4)), 1, kMaxBatchLaunches);
            for (int b = 0; b < kBatches; ++b)
                best = std::min(best, timed_batch(choice, launches));
        } catch (const Error& e) {
            // A block size the kernel cannot launch with (registers) is no candidate.
            kiln::detail::log_debug("tuning: block {} waves {} failed: {}", choice.block,
                                    choice.waves, e.what());
            best = std::numeric_limits<double>::infinity();
        }
        bump(counters().candidates_timed);
        timed.push_back(TimedCandidate{choice, best});
    }
    return timed;
}

LaunchChoice tune_and_store(const std::vector<LaunchChoice>& candidates, const cache::Key& key,
                            StreamRef stream, const std::function<void(const LaunchChoice&)>& run) {
    const std::vector<TimedCandidate> timed = time_candidates(candidates, stream, run);
    const std::optional<std::size_t> best = select_fastest(timed);
    if (!best) return candidates.front();
    const TimedCandidate& chosen = timed[*best];
    kiln::detail::log_debug("tuning {}: block {} waves {} ({:.4f} ms, default {:.4f} ms)",
                            key.hex(), chosen.choice.block, chosen.choice.waves, chosen.ms,
                            timed.front().ms);
    store_choice(tuning_store(), key, chosen.choice, timed.front().ms, chosen.ms);
    return chosen.choice;
}

void count_tuning_skipped() noexcept {
    bump(counters().skipped);
}

Array scratch_copy(const Array& output, StreamRef stream) {
    std::int64_t low = 0, high = 0; // byte offsets of the first and last element from data()
    for (int d = 0; d < output.ndim(); ++d) {
        const std::int64_t reach = (output.shape()[d] - 1) * output.strides()[d];
        (reach < 0 ? low : high) += reach;
    }
    if (output.size() == 0) return Array::wrap(0, output.shape(), output.dtype(), output.strides());
    const auto span = static_cast<std::size_t>(high - low) + output.itemsize();
    auto buffer = std::make_shared<DeviceBuffer>(span, stream);
    KILN_CU(cuMemcpyDtoDAsync(buffer->get(), output.data() + low, span, stream.get()));
    const CUdeviceptr origin = buffer->get() - low;
    return Array::wrap(origin, output.shape(), output.dtype(), output.strides(), std::move(buffer));
}

void use_scratch_arrays(Operands& ops, StreamRef stream) {
    for (std::size_t k = 0; k < ops.count; ++k)
        if (ops.is_output(k) ? !ops.is(k, OperandKind::scalar) : ops.is(k, OperandKind::raw))
            ops.arrays[k] = scratch_copy(ops.arrays[k], stream);
}

std::uint32_t grid_cap(int waves, int multiprocessors, int blocks_per_multiprocessor) noexcept {
    if (waves <= 0) return 0;
    return static_cast<std::uint32_t>(waves) * static_cast<std::uint32_t>(multiprocessors) *
           static_cast<std::uint32_t>(std::max(1, blocks_per_multiprocessor));
}

std::vector<int> block_candidates(int default_block, int min_block, int max_block) {
    std::vector<int> blocks{default_block};
    for (int block = min_block; block <= std::min(max_block, 1024); block *= 2)
        if (block != default_block) blocks.push_back(block);
    return blocks;
}

} // namespace detail
} // namespace kiln
