#pragma once
/// @file
/// Seeded host data for GPU tests: the same values on every run and machine (std::mt19937 and
/// std::uniform_real_distribution, as each test wrote them before).

#include <cstddef>
#include <random>
#include <vector>

namespace kiln::test {

/// @p n floats drawn uniformly from [@p lo, @p hi) by std::mt19937 seeded with @p seed.
inline std::vector<float> random_floats(std::size_t n, unsigned seed, float lo = -1.0f,
                                        float hi = 1.0f) {
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> value(lo, hi);
    std::vector<float> out(n);
    for (float& v : out)
        v = value(engine);
    return out;
}

} // namespace kiln::test
