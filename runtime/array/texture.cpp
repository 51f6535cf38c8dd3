#include "kiln/texture.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"

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
void check_options(const CudaArrayFormat& f, const TextureOptions& o) {
    const bool integer = is_integer(f.dtype);
    const bool narrow = integer && itemsize(f.dtype) <= 2;
    if (o.read == ReadMode::normalized_float && integer && !narrow)
        throw ArgumentError(std::string("a texture reads normalized floats from 8- and 16-bit "
                                        "integers only, not ") +
                            name(f.dtype) + ": use ReadMode::element");
    if (o.filter == FilterMode::linear && integer && o.read != ReadMode::normalized_float)
        throw ArgumentError(std::string("linear filtering gives floats: a texture of ") +
                            name(f.dtype) +
                            " needs ReadMode::normalized_float (8- and 16-bit integers) or "
                            "FilterMode::point");
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

void Texture::create(const CudaArray& array) {
    if (!array.get()) throw ArgumentError("a texture needs a CUDA array, not an empty one");
    check_options(array.format(), m_options);
    detail::current_context();
    CUDA_RESOURCE_DESC resource{};
    resource.resType = CU_RESOURCE_TYPE_ARRAY;
    resource.res.array.hArray = array.get();
    CUDA_TEXTURE_DESC texture{};
    // Dimensions the array lacks are clamped: the H100 fetches a 1-D array as a row at y = 0,
    // and linear filtering with border addressing there would blend in half the border colour.
    const int ndim = array.format().ndim();
    for (int k = 0; k < 3; ++k)
        texture.addressMode[k] = k < ndim
                                     ? address_of(m_options.address[static_cast<std::size_t>(k)])
                                     : CU_TR_ADDRESS_MODE_CLAMP;
    texture.filterMode =
        m_options.filter == FilterMode::linear ? CU_TR_FILTER_MODE_LINEAR : CU_TR_FILTER_MODE_POINT;
    // Integers are read as stored unless normalized floats are asked for; floats are floats.
    const bool as_integer = is_integer(array.format().dtype) && m_options.read == ReadMode::element;
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
    , m_options(other.m_options)
    , m_texture(std::exchange(other.m_texture, 0)) {}

Texture& Texture::operator=(Texture&& other) noexcept {
    if (this != &other) {
        if (m_texture) detail::driver().cuTexObjectDestroy(m_texture);
        m_texture = std::exchange(other.m_texture, 0);
        m_owned = std::move(other.m_owned);
        m_options = other.m_options;
    }
    return *this;
}

} // namespace kiln
