#pragma once
/// @file
/// The axes a reduction runs over (NumPy's `axis=`): every axis, one, or several. ReduceCall and
/// the ready reductions take an Axes; an int or a braced list converts to one, so calls read as in
/// NumPy: `kiln::sum(x, 1)`, `kiln::mean(x, {0, 2})`.

#include "kiln/array.hpp"

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln {

/// The axes of a reduction: all of them (the default), one, or several; negative values count
/// from the end. No allocation: held inline.
class Axes {
  public:
    /// Every axis (NumPy's axis=None). Note: `Axes::none()` (axis=()) reduces over no axis.
    Axes() noexcept = default;
    /// One axis.
    /// @param axis the axis; negative counts from the end. Checked against the array at the call.
    Axes(int axis) noexcept // NOLINT(google-explicit-constructor): `ReduceCall{1}`
        : m_all(false)
        , m_count(1) {
        m_values[0] = axis;
    }
    /// Several axes; an empty list reduces over none (each output is its single element).
    /// @param axes the axes, in any order; checked against the array at the call (range,
    /// duplicates).
    /// @throws AxisError for more than kMaxDims axes.
    // NOLINTNEXTLINE(google-explicit-constructor): `ReduceCall{{0, 2}}`
    Axes(std::initializer_list<int> axes);
    /// Several axes from a vector, as the braced-list constructor.
    /// @param axes the axes.
    /// @throws AxisError for more than kMaxDims axes.
    explicit Axes(const std::vector<int>& axes);
    /// Every axis.
    /// @return every axis (NumPy's axis=None), as the default constructor.
    static Axes all() noexcept { return {}; }
    /// No axis (NumPy's axis=()).
    /// @return no axis (NumPy's axis=()): each output element is its one input element.
    static Axes none() { return Axes(std::vector<int>{}); }

    /// Whether this means every axis.
    /// @return whether this means every axis.
    bool is_all() const noexcept { return m_all; }
    /// How many axes were given.
    /// @return how many axes were given (0 for all()).
    int size() const noexcept { return m_count; }
    /// Axis @p k as given, unchecked and not normalized.
    /// @param k an index below size().
    /// @return the axis.
    int operator[](int k) const noexcept { return m_values[k]; }
    /// The axes as NumPy prints them, for messages.
    /// @return the axes as NumPy would print them, for messages.
    std::string to_string() const; ///< "None", "1", "(0, 2)"

  private:
    void assign(const int* axes, std::size_t count);

    bool m_all = true;
    int m_count = 0;
    int m_values[kMaxDims] = {};
};

} // namespace kiln
