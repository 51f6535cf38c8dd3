#include "param_writer.hpp"

#include "kiln/error.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace kiln::detail {

std::size_t device_alignment(DType dtype) noexcept {
    switch (dtype) {
    case DType::complex64:
        return 8;
    case DType::complex128:
        return 16;
    default:
        return itemsize(dtype);
    }
}

std::size_t ParamWriter::scalar(const Scalar& value, DType dtype) {
    alignas(16) unsigned char converted[16];
    value.cast_to(dtype, converted);
    return put(converted, itemsize(dtype), device_alignment(dtype));
}

void ParamWriter::write_scalar(const Scalar& value, DType dtype, unsigned char* at) {
    alignas(16) unsigned char converted[16];
    value.cast_to(dtype, converted);
    std::memcpy(at, converted, itemsize(dtype));
}

void ParamWriter::too_many() {
    throw ArgumentError("too many kernel arguments: their total exceeds " +
                        std::to_string(kCapacity) + " bytes");
}

std::size_t ParamWriter::finish() {
    const std::size_t size = (m_size + m_alignment - 1) / m_alignment * m_alignment;
    std::memset(m_buffer + m_size, 0, size - m_size);
    m_size = size;
    return size;
}

} // namespace kiln::detail
