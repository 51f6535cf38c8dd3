// SharedRegistry (kernels/shared_registry.hpp), through which RawModules built from the same
// program share one CUmodule per context.

#include "raw/shared_registry.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <vector>

using kiln::detail::SharedRegistry;

TEST(SharedRegistry, GivesTheLiveObjectForAKeyAgain) {
    SharedRegistry<int, int> registry;
    int made = 0;
    auto make = [&] { return std::make_shared<int>(++made); };
    const auto first = registry.get(1, make);
    EXPECT_EQ(registry.get(1, make), first);
    EXPECT_NE(registry.get(2, make), first);
    EXPECT_EQ(made, 2);
}

TEST(SharedRegistry, ForgetsObjectsNobodyHolds) {
    // A program run that makes and drops many short-lived modules keeps no entry for them.
    SharedRegistry<int, int> registry;
    const auto kept = registry.get(0, [] { return std::make_shared<int>(0); });
    for (int key = 1; key <= 100; ++key)
        registry.get(key, [&] { return std::make_shared<int>(key); }); // dropped at once
    registry.get(101, [] { return std::make_shared<int>(101); });
    EXPECT_EQ(registry.size(), 2u) << "the held object and the last one made";
    EXPECT_EQ(registry.get(0, [] { return std::make_shared<int>(-1); }), kept);
    EXPECT_EQ(*registry.get(5, [] { return std::make_shared<int>(-5); }), -5) << "made anew";
}

TEST(SharedRegistry, AMakeThatThrowsKeepsNothing) {
    SharedRegistry<int, int> registry;
    EXPECT_THROW(registry.get(1, []() -> std::shared_ptr<int> { throw std::runtime_error("x"); }),
                 std::runtime_error);
    EXPECT_EQ(registry.size(), 0u);
}
