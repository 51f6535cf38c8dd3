#include "kiln/cuda_array.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "texel_format.hpp"

#include <string>
#include <utility>

namespace kiln {

namespace detail {

CUarray_format texel_format(DType dtype) {
    switch (dtype) {
    case DType::float32:
        return CU_AD_FORMAT_FLOAT;
    case DType::float16:
        return CU_AD_FORMAT_HALF;
    case DType::int8:
        return CU_AD_FORMAT_SIGNED_INT8;
    case DType::int16:
        return CU_AD_FORMAT_SIGNED_INT16;
    case DType::int32:
        return CU_AD_FORMAT_SIGNED_INT32;
    case DType::uint8:
        return CU_AD_FORMAT_UNSIGNED_INT8;
    case DType::uint16:
        return CU_AD_FORMAT_UNSIGNED_INT16;
    case DType::uint32:
        return CU_AD_FORMAT_UNSIGNED_INT32;
    default:
        throw ArgumentError(std::string("a CUDA array or texture cannot hold ") + name(dtype) +
                            " elements: use float32, float16 or an 8-, 16- or 32-bit integer "
                            "type (convert with kiln::astype)");
    }
}

void check_texel_channels(int channels) {
    if (channels != 1 && channels != 2 && channels != 4)
        throw ArgumentError("a CUDA array or texture has 1, 2 or 4 channels, not " +
                            std::to_string(channels));
}

} // namespace detail

namespace {

// The format an Array of @p shape maps to (channels last, then (w), (h, w) or (d, h, w)).
CudaArrayFormat format_for(const Dims& shape, DType dtype, int channels, bool surface) {
    detail::check_texel_channels(channels);
    const int extents = shape.size() - (channels > 1 ? 1 : 0);
    if (extents < 1 || extents > 3 || (channels > 1 && shape[shape.size() - 1] != channels))
        throw ArgumentError(
            "a CUDA array is made from an array of shape (w), (h, w) or (d, h, w)" +
            std::string(channels > 1 ? " followed by its " + std::to_string(channels) + " channels"
                                     : std::string()) +
            ", not " + shape.to_string());
    CudaArrayFormat f;
    f.width = static_cast<std::size_t>(shape[extents - 1]);
    if (extents >= 2) f.height = static_cast<std::size_t>(shape[extents - 2]);
    if (extents == 3) f.depth = static_cast<std::size_t>(shape[0]);
    f.dtype = dtype;
    f.channels = channels;
    f.surface_load_store = surface;
    return f;
}

} // namespace

void CudaArray::Destroy::operator()(CUarray_st* array) const noexcept {
    // A handle exists only once the driver loaded; destructors never throw.
    detail::driver().cuArrayDestroy(array);
}

CudaArray::CudaArray(const CudaArrayFormat& format)
    : m_format(format) {
    detail::check_texel_channels(format.channels);
    const CUarray_format element = detail::texel_format(format.dtype);
    if (format.width == 0 || (format.depth && !format.height))
        throw ArgumentError("a CUDA array needs a width of at least 1, and a height with a depth");
    detail::current_context();
    CUDA_ARRAY3D_DESCRIPTOR d{};
    d.Width = format.width;
    d.Height = format.height;
    d.Depth = format.depth;
    d.Format = element;
    d.NumChannels = static_cast<unsigned>(format.channels);
    d.Flags = format.surface_load_store ? CUDA_ARRAY3D_SURFACE_LDST : 0U;
    CUarray handle = nullptr;
    KILN_CU(cuArray3DCreate(&handle, &d));
    m_array.reset(handle);
}

CudaArray CudaArray::from(const Array& source, int channels, bool surface_load_store,
                          StreamRef stream) {
    CudaArray array(format_for(source.shape(), source.dtype(), channels, surface_load_store));
    array.copy_from(source, stream);
    return array;
}

CudaArray::~CudaArray() = default;

CudaArray::CudaArray(CudaArray&& other) noexcept
    : m_array(std::move(other.m_array))
    , m_format(std::exchange(other.m_format, {})) {}

CudaArray& CudaArray::operator=(CudaArray&& other) noexcept {
    m_array = std::move(other.m_array);
    m_format = std::exchange(other.m_format, {});
    return *this;
}

Dims CudaArray::shape() const {
    Dims shape;
    if (m_format.depth) shape.push_back(static_cast<std::int64_t>(m_format.depth));
    if (m_format.height) shape.push_back(static_cast<std::int64_t>(m_format.height));
    shape.push_back(static_cast<std::int64_t>(m_format.width));
    if (m_format.channels > 1) shape.push_back(m_format.channels);
    return shape;
}

void CudaArray::copy_from(const Array& source, StreamRef stream) const {
    copy(source, true, stream);
}

void CudaArray::copy_to(const Array& destination, StreamRef stream) const {
    copy(destination, false, stream);
}

Array CudaArray::to_array(StreamRef stream) const {
    Array out = empty(shape(), m_format.dtype, stream);
    copy_to(out, stream);
    return out;
}

void CudaArray::copy(const Array& linear, bool into_array, StreamRef stream) const {
    if (!m_array) throw ArgumentError("this CudaArray is empty (moved from)");
    if (linear.dtype() != m_format.dtype || linear.shape() != shape())
        throw ArgumentError(std::string("cannot copy between a CUDA array of ") +
                            name(m_format.dtype) + " and shape " + shape().to_string() +
                            " and an array of " + name(linear.dtype()) + " and shape " +
                            linear.shape().to_string() + ": they must match");
    if (!linear.is_c_contiguous())
        throw ArgumentError("a CUDA array copies from and to C-contiguous arrays only: make one "
                            "with kiln::ascontiguousarray");
    detail::current_context();
    const std::size_t row =
        m_format.width * linear.itemsize() * static_cast<std::size_t>(m_format.channels);
    const std::size_t height = m_format.height ? m_format.height : 1;
    if (m_format.depth == 0) {
        CUDA_MEMCPY2D c{};
        if (into_array) {
            c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
            c.srcDevice = linear.data();
            c.srcPitch = row;
            c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
            c.dstArray = m_array.get();
        } else {
            c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
            c.srcArray = m_array.get();
            c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            c.dstDevice = linear.data();
            c.dstPitch = row;
        }
        c.WidthInBytes = row;
        c.Height = height;
        KILN_CU(cuMemcpy2DAsync(&c, stream.get()));
    } else {
        CUDA_MEMCPY3D c{};
        if (into_array) {
            c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
            c.srcDevice = linear.data();
            c.srcPitch = row;
            c.srcHeight = height;
            c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
            c.dstArray = m_array.get();
        } else {
            c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
            c.srcArray = m_array.get();
            c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            c.dstDevice = linear.data();
            c.dstPitch = row;
            c.dstHeight = height;
        }
        c.WidthInBytes = row;
        c.Height = height;
        c.Depth = m_format.depth;
        KILN_CU(cuMemcpy3DAsync(&c, stream.get()));
    }
    stream.synchronize();
}

} // namespace kiln
