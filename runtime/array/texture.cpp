#include "kiln/texture.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"
#include "texel_format.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace kiln {

namespace {

CUaddress_mode address_of(AddressMode mode) noexcept {
    switch (mode) {
    case AddressMode::wrap:
        return CU_TR_ADDRESS_MODE_WRAP;
    case AddressMode::mirror:
        return CU_TR_ADDRESS_MODE_MIRROR;
    case AddressMode::border:
        return CU_TR_ADDRESS_MODE_BORDER;
    default:
        return CU_TR_ADDRESS_MODE_CLAMP;
    }
}

// The driver accepts some of these and returns garbage or fails at the first fetch; say why here.
void check_options(DType dtype, const TextureOptions& o) {
    const bool integer = is_integer(dtype);
    const bool narrow = integer && itemsize(dtype) <= 2;
    if (o.read == ReadMode::normalized_float && integer && !narrow)
        throw ArgumentError(std::string("a texture reads normalized floats from 8- and 16-bit "
                                        "integers only, not ") +
                            name(dtype) + ": use ReadMode::element");
    if (o.filter == FilterMode::linear && integer && o.read != ReadMode::normalized_float)
        throw ArgumentError(std::string("linear filtering gives floats: a texture of ") +
                            name(dtype) +
                            " needs ReadMode::normalized_float (8- and 16-bit integers) or "
                            "FilterMode::point");
}

// The hardware neither filters nor addresses a linear resource (the driver ignores the settings
// and tex1Dfetch reads zero outside [0, n)): asking for them is a mistake, said here.
void check_linear_options(const TextureOptions& o) {
    const TextureOptions plain;
    if (o.filter != FilterMode::point || o.normalized_coordinates || o.address != plain.address)
        throw ArgumentError(
            "a texture over a 1-D array's memory is read with tex1Dfetch at integer indices: "
            "point filtering, unnormalized coordinates and the default address mode only (an "
            "index outside [0, n) reads zero); for filtering or addressing, make a 2-D texture "
            "over kiln::empty_pitched memory or one over a CudaArray");
}

// What the device allows a texture over linear or pitched memory (cuTexObjectCreate's rules).
struct MemoryTextureLimits {
    std::int64_t alignment = 0;       // of the first element's address, bytes
    std::int64_t pitch_alignment = 0; // of the row stride, bytes
    std::int64_t linear_width = 0;    // elements of a 1-D texture
    std::int64_t pitch_width = 0, pitch_height = 0, pitch_bytes = 0;
};

MemoryTextureLimits limits_of(const Device& device) {
    MemoryTextureLimits l;
    l.alignment = device.attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT);
    l.pitch_alignment = device.attribute(CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT);
    l.linear_width = device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH);
    l.pitch_width = device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH);
    l.pitch_height = device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT);
    l.pitch_bytes = device.attribute(CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH);
    // A driver that answers 0 for an alignment asks for none.
    if (l.alignment < 1) l.alignment = 1;
    if (l.pitch_alignment < 1) l.pitch_alignment = 1;
    return l;
}

std::int64_t round_up(std::int64_t value, std::int64_t multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

// A limit of 0 is one the driver does not report: not checked.
void check_limit(const char* what, std::int64_t value, std::int64_t limit) {
    if (limit > 0 && value > limit)
        throw ArgumentError(std::string("a texture over an array's memory allows a ") + what +
                            " of " + std::to_string(limit) + " on this device, not " +
                            std::to_string(value) + ": copy the data into a CudaArray instead");
}

// The 1-D linear or 2-D pitched resource that reads @p array's memory in place, after every check
// that needs no device; the device's alignments and limits are checked by the caller.
struct MemoryResource {
    CUDA_RESOURCE_DESC desc{};
    int ndim = 1;
    std::int64_t width = 0, height = 0, pitch = 0, row_bytes = 0;
};

MemoryResource describe_memory(const Array& array, int channels) {
    if (array.size() == 0 || !array.data())
        throw ArgumentError("a texture needs memory to read: this array is empty (shape " +
                            array.shape().to_string() + ")");
    detail::check_texel_channels(channels);
    const CUarray_format format = detail::texel_format(array.dtype());
    const Dims& shape = array.shape();
    const Dims& strides = array.strides();
    const int extents = shape.size() - (channels > 1 ? 1 : 0);
    if (extents < 1 || extents > 2 || (channels > 1 && shape[shape.size() - 1] != channels))
        throw ArgumentError(
            "a texture over an array's memory reads shape (w) (linear) or (h, w) (pitched rows)" +
            std::string(channels > 1 ? " followed by its " + std::to_string(channels) + " channels"
                                     : std::string()) +
            ", not " + shape.to_string() +
            ": for 3-D data make a CudaArray (kiln::Texture(kiln::CudaArray::from(array)))");
    const auto item = static_cast<std::int64_t>(array.itemsize());
    const std::int64_t element = item * channels;
    const bool channels_packed = channels == 1 || strides[shape.size() - 1] == item;
    if (!channels_packed || (shape[extents - 1] > 1 && strides[extents - 1] != element))
        throw ArgumentError("a texture reads the elements of a row side by side (" +
                            std::to_string(element) + " bytes apart); this array's strides are " +
                            strides.to_string() +
                            ": copy it into kiln::empty_pitched memory with kiln::copy");
    MemoryResource r;
    r.ndim = extents;
    r.width = shape[extents - 1];
    r.row_bytes = r.width * element;
    if (extents == 1) {
        r.desc.resType = CU_RESOURCE_TYPE_LINEAR;
        r.desc.res.linear.devPtr = array.data();
        r.desc.res.linear.format = format;
        r.desc.res.linear.numChannels = static_cast<unsigned>(channels);
        r.desc.res.linear.sizeInBytes = static_cast<std::size_t>(r.row_bytes);
        return r;
    }
    r.height = shape[0];
    r.pitch = r.height > 1 ? strides[0] : r.row_bytes; // one row: its stride is never used
    if (r.pitch < r.row_bytes)
        throw ArgumentError("a 2-D texture reads rows that follow each other at a stride of at "
                            "least their length (" +
                            std::to_string(r.row_bytes) + " bytes); this array's strides are " +
                            strides.to_string() +
                            ": copy it into kiln::empty_pitched memory with kiln::copy");
    r.desc.resType = CU_RESOURCE_TYPE_PITCH2D;
    r.desc.res.pitch2D.devPtr = array.data();
    r.desc.res.pitch2D.format = format;
    r.desc.res.pitch2D.numChannels = static_cast<unsigned>(channels);
    r.desc.res.pitch2D.width = static_cast<std::size_t>(r.width);
    r.desc.res.pitch2D.height = static_cast<std::size_t>(r.height);
    r.desc.res.pitch2D.pitchInBytes = static_cast<std::size_t>(r.pitch);
    return r;
}

void check_device_rules(const MemoryResource& r, CUdeviceptr data, const MemoryTextureLimits& l) {
    const auto address = static_cast<std::int64_t>(data);
    if (address % l.alignment != 0)
        throw ArgumentError("a texture over an array's memory starts at a multiple of " +
                            std::to_string(l.alignment) +
                            " bytes (the device's texture alignment); this array's first element "
                            "is " +
                            std::to_string(address % l.alignment) +
                            " bytes past one (a view that starts inside its memory?): allocate "
                            "it with kiln::empty_pitched");
    if (r.ndim == 1) {
        check_limit("1-D width", r.width, l.linear_width);
        return;
    }
    if (r.height > 1 && r.pitch % l.pitch_alignment != 0)
        throw ArgumentError("a 2-D texture reads rows whose stride is a multiple of " +
                            std::to_string(l.pitch_alignment) +
                            " bytes (the device's texture pitch alignment); this array's rows "
                            "are " +
                            std::to_string(r.pitch) +
                            " bytes apart: allocate it with kiln::empty_pitched (which pads each "
                            "row) and copy into it with kiln::copy");
    check_limit("width", r.width, l.pitch_width);
    check_limit("height", r.height, l.pitch_height);
    check_limit("row stride in bytes", r.pitch, l.pitch_bytes);
}

} // namespace

namespace detail {
CUtexObject kernel_argument(const Texture& texture) noexcept {
    return texture.get();
}
} // namespace detail

Texture::Texture(const CudaArray& array, const TextureOptions& options)
    : m_options(options) {
    create(array);
}

Texture::Texture(CudaArray&& array, const TextureOptions& options)
    : m_owned(std::move(array))
    , m_options(options) {
    create(m_owned);
}

Texture::Texture(const Array& array, const TextureOptions& options, int channels)
    : m_memory(array)
    , m_options(options) {
    MemoryResource r = describe_memory(array, channels);
    check_options(array.dtype(), m_options);
    if (r.ndim == 1) check_linear_options(m_options);
    const int device = detail::current_device_ordinal();
    const int home = array.device();
    if (home >= 0 && home != device)
        throw ArgumentError("this array is on device " + std::to_string(home) +
                            ", the current context's device is " + std::to_string(device) +
                            ": make the texture with the array's device current");
    const MemoryTextureLimits limits = limits_of(Device(device));
    // A single row's stride is never read: the driver gets a pitch its rules accept.
    if (r.ndim == 2 && r.height == 1)
        r.desc.res.pitch2D.pitchInBytes =
            static_cast<std::size_t>(round_up(r.row_bytes, limits.pitch_alignment));
    check_device_rules(r, array.data(), limits);
    m_resource = r.ndim == 1 ? TextureResource::linear : TextureResource::pitch2d;
    create(r.desc, array.dtype(), r.ndim);
}

void Texture::create(const CudaArray& array) {
    if (!array.get()) throw ArgumentError("a texture needs a CUDA array, not an empty one");
    check_options(array.format().dtype, m_options);
    detail::current_context();
    CUDA_RESOURCE_DESC resource{};
    resource.resType = CU_RESOURCE_TYPE_ARRAY;
    resource.res.array.hArray = array.get();
    create(resource, array.format().dtype, array.format().ndim());
}

void Texture::create(const CUDA_RESOURCE_DESC& resource, DType dtype, int ndim) {
    CUDA_TEXTURE_DESC texture{};
    // Dimensions the array lacks are clamped: the H100 fetches a 1-D array as a row at y = 0,
    // and linear filtering with border addressing there would blend in half the border colour.
    for (int k = 0; k < 3; ++k)
        texture.addressMode[k] = k < ndim
                                     ? address_of(m_options.address[static_cast<std::size_t>(k)])
                                     : CU_TR_ADDRESS_MODE_CLAMP;
    texture.filterMode =
        m_options.filter == FilterMode::linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
    // Integers are read as stored unless normalized floats are asked for; floats are floats.
    const bool as_integer = is_integer(dtype) && m_options.read == ReadMode::element;
    texture.flags = (as_integer ? CU_TRSF_READ_AS_INTEGER : 0U) |
                    (m_options.normalized_coordinates ? CU_TRSF_NORMALIZED_COORDINATES : 0U);
    for (int k = 0; k < 4; ++k)
        texture.borderColor[k] = m_options.border_color[static_cast<std::size_t>(k)];
    KILN_CU(cuTexObjectCreate(&m_texture, &resource, &texture, nullptr));
}

Texture::~Texture() {
    // A handle exists only once the driver loaded; destructors never throw.
    if (m_texture) detail::driver().cuTexObjectDestroy(m_texture);
}

Texture::Texture(Texture&& other) noexcept
    : m_owned(std::move(other.m_owned))
    , m_memory(std::exchange(other.m_memory, Array()))
    , m_options(other.m_options)
    , m_resource(other.m_resource)
    , m_texture(std::exchange(other.m_texture, 0)) {}

Texture& Texture::operator=(Texture&& other) noexcept {
    if (this != &other) {
        if (m_texture) detail::driver().cuTexObjectDestroy(m_texture);
        m_texture = std::exchange(other.m_texture, 0);
        m_owned = std::move(other.m_owned);
        m_memory = std::exchange(other.m_memory, Array());
        m_options = other.m_options;
        m_resource = other.m_resource;
    }
    return *this;
}

Array empty_pitched(Dims shape, DType dtype, StreamRef stream) {
    if (shape.empty())
        throw ArgumentError("kiln::empty_pitched makes arrays of one or more dimensions, not 0-d");
    for (int k = 0; k < shape.size(); ++k)
        if (shape[k] < 0)
            throw ArgumentError("kiln::empty_pitched takes extents of 0 or more, not " +
                                shape.to_string());
    const auto item = static_cast<std::int64_t>(itemsize(dtype));
    std::int64_t row = item;
    for (int k = 1; k < shape.size(); ++k)
        row *= shape[k];
    if (shape.product() == 0 || row == 0) return empty(shape, dtype, stream);
    const MemoryTextureLimits limits = limits_of(Device(detail::current_device_ordinal()));
    const std::int64_t pitch = shape.size() > 1 ? round_up(row, limits.pitch_alignment) : row;
    Dims strides = c_strides(shape, itemsize(dtype));
    strides[0] = pitch;
    // The allocator's alignment may be less than the texture's: allocate one alignment more and
    // start at the first multiple of it. The block owns the memory; the view shares it.
    const Array block = empty({shape[0] * pitch + limits.alignment}, DType::uint8, stream);
    const std::int64_t skip = round_up(static_cast<std::int64_t>(block.data()), limits.alignment) -
                              static_cast<std::int64_t>(block.data());
    return Array::wrap(block.data() + static_cast<CUdeviceptr>(skip), shape, dtype, strides,
                       block.owner(), block.recorded_device());
}

} // namespace kiln
