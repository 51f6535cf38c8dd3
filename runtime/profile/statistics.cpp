#include "kiln/statistics.hpp"

#include <algorithm>
#include <cmath>

namespace kiln {

Statistics Statistics::of(const std::vector<double>& values) {
    Statistics s;
    s.count = values.size();
    if (values.empty()) return s;
    double sum = 0;
    for (double v : values)
        sum += v;
    s.mean = sum / static_cast<double>(s.count);
    // Two passes: the sum of squared deviations stays accurate where sum(x^2) - n*mean^2 would
    // cancel catastrophically for long series of nearly equal times.
    double squares = 0;
    for (double v : values)
        squares += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(squares / static_cast<double>(s.count));
    const auto [low, high] = std::minmax_element(values.begin(), values.end());
    s.min = *low;
    s.max = *high;
    return s;
}

} // namespace kiln
