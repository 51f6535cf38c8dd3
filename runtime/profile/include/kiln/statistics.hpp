#pragma once
/// @file
/// Summary statistics of a series of measured times, as the benchmark and timing reports print
/// them.

#include <cstddef>
#include <vector>

namespace kiln {

/// Count, mean, standard deviation, minimum and maximum of a series.
struct Statistics {
    /// How many values.
    std::size_t count = 0;
    /// Their arithmetic mean.
    double mean = 0;
    /// The population standard deviation (divided by the count, as numpy's std), 0 for one value.
    double stddev = 0;
    /// The smallest value.
    double min = 0;
    /// The largest value.
    double max = 0;

    /// The statistics of @p values; all zero for an empty series. NaN values propagate into the
    /// mean and standard deviation.
    /// @param values the series.
    /// @return its statistics.
    static Statistics of(const std::vector<double>& values);
};

} // namespace kiln
