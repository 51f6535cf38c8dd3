#include "kiln/call_arguments.hpp"

#include "kiln/error.hpp"

#include <string>
#include <utility>

namespace kiln {

Outputs::operator Array() const {
    if (m_count != 1)
        throw ArgumentError("this call has " + std::to_string(m_count) +
                            " outputs: index them (outputs[i]) instead of converting to one Array");
    return m_arrays[0];
}

void Outputs::push_back(Array array) {
    if (m_count == m_arrays.size())
        throw ArgumentError("more than " + std::to_string(kCapacity) + " outputs");
    m_arrays[m_count++] = std::move(array);
}

} // namespace kiln
