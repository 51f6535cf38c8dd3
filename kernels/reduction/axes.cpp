#include "kiln/axes.hpp"

#include "kiln/error.hpp"

namespace kiln {

Axes::Axes(std::initializer_list<int> axes) {
    assign(axes.begin(), axes.size());
}

Axes::Axes(const std::vector<int>& axes) {
    assign(axes.data(), axes.size());
}

void Axes::assign(const int* axes, std::size_t count) {
    if (count > static_cast<std::size_t>(kMaxDims))
        throw AxisError("at most " + std::to_string(kMaxDims) + " axes");
    m_all = false;
    for (std::size_t k = 0; k < count; ++k)
        m_values[m_count++] = axes[k];
}

std::string Axes::to_string() const {
    if (m_all) return "None";
    if (m_count == 1) return std::to_string(m_values[0]);
    std::string s = "(";
    for (int k = 0; k < m_count; ++k)
        s += (k ? ", " : "") + std::to_string(m_values[k]);
    return s + ")";
}

} // namespace kiln
