#pragma once
/// @file
/// The axes a reduction runs over (NumPy's `axis=`): every axis, one, or several.

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
    Axes(int axis) noexcept // NOLINT: implicit, `ReduceCall{1}`
        : m_all(false)
        , m_count(1) {
        m_values[0] = axis;
    }
    /// Several axes; an empty list reduces over none (each output is its single element).
    Axes(std::initializer_list<int> axes); // NOLINT: implicit, `ReduceCall{{0, 2}}`
    explicit Axes(const std::vector<int>& axes);
    static Axes all() noexcept { return {}; }
    static Axes none() { return Axes(std::vector<int>{}); }

    bool is_all() const noexcept { return m_all; }
    int size() const noexcept { return m_count; }
    int operator[](int k) const noexcept { return m_values[k]; }
    std::string to_string() const; ///< "None", "1", "(0, 2)"

  private:
    void assign(const int* axes, std::size_t count);

    bool m_all = true;
    int m_count = 0;
    int m_values[kMaxDims] = {};
};

} // namespace kiln
