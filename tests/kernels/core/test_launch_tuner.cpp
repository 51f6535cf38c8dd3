// The launch tuner's logic without a GPU: the choice among timed candidates (fake timings), shape
// classes, the persistent key, the stored choice's payload and its acceptance, and the scope.

#include "core/launch_tuner.hpp"

#include "kiln/cache/tuning_store.hpp"
#include "kiln/tuning.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

using kiln::detail::LaunchChoice;
using kiln::detail::TimedCandidate;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<TimedCandidate> timed(const std::vector<double>& ms) {
    std::vector<TimedCandidate> out;
    for (std::size_t k = 0; k < ms.size(); ++k)
        out.push_back({LaunchChoice{static_cast<std::uint16_t>(128 << k), 0}, ms[k]});
    return out;
}

kiln::cache::Key key_with(std::string_view source = "src", std::string_view shape = "n20",
                          std::string_view device = "NVIDIA H100 80GB HBM3", int major = 9,
                          int minor = 0, const std::vector<std::string>& options = {"-O3"}) {
    return kiln::detail::tuning_key("elementwise", source, options, shape, device, major, minor);
}

kiln::cache::Config config_for(const std::filesystem::path& dir) {
    kiln::cache::Config config;
    config.dir = dir;
    return config;
}

} // namespace

TEST(LaunchTuner, SelectsTheFastestCandidate) {
    EXPECT_EQ(kiln::detail::select_fastest(timed({1.0, 0.5, 0.8})), 1u);
    EXPECT_EQ(kiln::detail::select_fastest(timed({1.0, 0.9, 0.7, 0.71})), 2u);
}

TEST(LaunchTuner, KeepsTheDefaultWhenNoCandidateIsClearlyFaster) {
    EXPECT_EQ(kiln::detail::select_fastest(timed({1.0, 0.99, 0.985})), 0u); // within 3 %
    EXPECT_EQ(kiln::detail::select_fastest(timed({1.0, 0.96}), 0.05), 0u);
    EXPECT_EQ(kiln::detail::select_fastest(timed({1.0, 0.96}), 0.0), 1u);
    EXPECT_EQ(kiln::detail::select_fastest(timed({0.5, 1.0, 2.0})), 0u);
}

TEST(LaunchTuner, FailedCandidatesNeverWin) {
    EXPECT_EQ(kiln::detail::select_fastest(timed({kInf, 2.0, std::nan("")})), 1u);
    EXPECT_EQ(kiln::detail::select_fastest(timed({1.0, -1.0, kInf})), 0u);
    EXPECT_FALSE(kiln::detail::select_fastest(timed({kInf, std::nan("")})));
    EXPECT_FALSE(kiln::detail::select_fastest({}));
}

TEST(LaunchTuner, SizeClassIsTheBitLength) {
    EXPECT_EQ(kiln::detail::size_class(0), 0u);
    EXPECT_EQ(kiln::detail::size_class(-5), 0u);
    EXPECT_EQ(kiln::detail::size_class(1), 1u);
    EXPECT_EQ(kiln::detail::size_class(1023), 10u);
    EXPECT_EQ(kiln::detail::size_class(1024), 11u);
    EXPECT_EQ(kiln::detail::size_class(1'000'000), kiln::detail::size_class(600'000));
    EXPECT_NE(kiln::detail::size_class(1'000'000), kiln::detail::size_class(10'000'000));
}

TEST(LaunchTuner, KeyIncludesKernelShapeClassAndDevice) {
    const auto base = key_with();
    EXPECT_EQ(key_with(), base); // deterministic: another process finds it
    EXPECT_NE(key_with("other source"), base);
    EXPECT_NE(key_with("src", "n21"), base);
    EXPECT_NE(key_with("src", "n20", "NVIDIA H200"), base);
    EXPECT_NE(key_with("src", "n20", "NVIDIA H100 80GB HBM3", 8, 0), base);
    EXPECT_NE(key_with("src", "n20", "NVIDIA H100 80GB HBM3", 9, 1), base);
    EXPECT_NE(key_with("src", "n20", "NVIDIA H100 80GB HBM3", 9, 0, {}), base);
    EXPECT_NE(key_with("src", "n20", "NVIDIA H100 80GB HBM3", 9, 0, {"-O", "3"}),
              key_with("src", "n20", "NVIDIA H100 80GB HBM3", 9, 0, {"-O3"}));
    EXPECT_NE(
        kiln::detail::tuning_key("reduction", "src", {"-O3"}, "n20", "NVIDIA H100 80GB HBM3", 9, 0),
        base);
}

TEST(LaunchTuner, ChoiceRoundTripsThroughItsPayload) {
    const LaunchChoice choice{512, 4};
    const std::string payload = kiln::detail::encode_choice(choice, 0.0125, 0.0100);
    EXPECT_NE(payload.find("default_ms=0.012500"), std::string::npos);
    EXPECT_EQ(kiln::detail::decode_choice(payload), choice);
}

TEST(LaunchTuner, MalformedPayloadsDecodeToNothing) {
    for (const char* bad :
         {"", "block=256\n", "waves=0\n", "block=0\nwaves=0\n", "block=2048\nwaves=0\n",
          "block=256\nwaves=-1\n", "block=256\nwaves=65\n", "block=25x\nwaves=0\n",
          "block=256\nblock=128\nwaves=0\n", "block 256\nwaves=0\n", "block=\nwaves=0\n"})
        EXPECT_FALSE(kiln::detail::decode_choice(bad)) << bad;
}

TEST(LaunchTuner, StoredChoiceIsUsedOnlyWhenTheTunerCouldHaveMadeIt) {
    kiln::test::TempDir dir;
    const kiln::cache::TuningStore store(config_for(dir.path()));
    const auto key = key_with();
    const std::vector<LaunchChoice> candidates{{256, 0}, {256, 1}, {512, 0}};
    const auto before = kiln::tuning_statistics();

    EXPECT_FALSE(kiln::detail::load_choice(store, key, candidates)); // nothing stored: no count
    kiln::detail::store_choice(store, key, {512, 0}, 0.02, 0.01);
    EXPECT_EQ(kiln::detail::load_choice(store, key, candidates), (LaunchChoice{512, 0}));
    auto after = kiln::tuning_statistics();
    EXPECT_EQ(after.disk_stores - before.disk_stores, 1u);
    EXPECT_EQ(after.disk_hits - before.disk_hits, 1u);
    EXPECT_EQ(after.rejected - before.rejected, 0u);

    // A well-formed record naming a configuration outside the candidates (planted, or from
    // another Kiln) is refused, and counted.
    ASSERT_TRUE(store.store(key, kiln::detail::encode_choice({1024, 0}, 1, 1)));
    EXPECT_FALSE(kiln::detail::load_choice(store, key, candidates));
    ASSERT_TRUE(store.store(key, "not a choice"));
    EXPECT_FALSE(kiln::detail::load_choice(store, key, candidates));
    kiln::test::write_file(store.path(key), "damaged");
    EXPECT_FALSE(kiln::detail::load_choice(store, key, candidates));
    after = kiln::tuning_statistics();
    EXPECT_EQ(after.rejected - before.rejected, 3u);
    EXPECT_EQ(after.disk_hits - before.disk_hits, 1u);
}

TEST(LaunchTuner, ScopesNestAndBelongToTheirThread) {
    EXPECT_FALSE(kiln::detail::tuning_scope_active());
    EXPECT_FALSE(kiln::detail::tuning_requested(false, false));
    EXPECT_TRUE(kiln::detail::tuning_requested(true, false));
    EXPECT_TRUE(kiln::detail::tuning_requested(false, true));
    {
        kiln::TuningScope outer;
        EXPECT_TRUE(kiln::detail::tuning_requested(false, false));
        {
            kiln::TuningScope inner;
            EXPECT_TRUE(kiln::detail::tuning_scope_active());
        }
        EXPECT_TRUE(kiln::detail::tuning_scope_active());
        bool other_thread = true;
        std::thread([&] { other_thread = kiln::detail::tuning_scope_active(); }).join();
        EXPECT_FALSE(other_thread);
    }
    EXPECT_FALSE(kiln::detail::tuning_scope_active());
}

TEST(LaunchTuner, BlockCandidatesStartWithTheDefault) {
    EXPECT_EQ(kiln::detail::block_candidates(256, 128, 1024),
              (std::vector<int>{256, 128, 512, 1024}));
    EXPECT_EQ(kiln::detail::block_candidates(96, 64, 128), (std::vector<int>{96, 64, 128}));
    EXPECT_EQ(kiln::detail::block_candidates(256, 64, 4096),
              (std::vector<int>{256, 64, 128, 512, 1024}));
}

TEST(LaunchTuner, GridCapIsWavesOfResidentBlocks) {
    EXPECT_EQ(kiln::detail::grid_cap(0, 132, 8), 0u);
    EXPECT_EQ(kiln::detail::grid_cap(1, 132, 8), 1056u);
    EXPECT_EQ(kiln::detail::grid_cap(4, 132, 2), 1056u);
    EXPECT_EQ(kiln::detail::grid_cap(1, 132, 0), 132u); // occupancy unknown: at least one each
}
