#include "kiln/surface.hpp"

#include "driver/driver.hpp"
#include "kiln/device.hpp"
#include "kiln/error.hpp"

#include <utility>

namespace kiln {

namespace detail {
CUsurfObject kernel_argument(const Surface& surface) noexcept {
    return surface.get();
}
} // namespace detail

Surface::Surface(const CudaArray& array) {
    create(array);
}

Surface::Surface(CudaArray&& array)
    : m_owned(std::move(array)) {
    create(m_owned);
}

void Surface::create(const CudaArray& array) {
    if (!array.get()) throw ArgumentError("a surface needs a CUDA array, not an empty one");
    if (!array.format().surface_load_store)
        throw ArgumentError("a surface needs a CUDA array made with surface_load_store "
                            "(CudaArray::from(source, channels, true) or "
                            "CudaArrayFormat::surface_load_store)");
    detail::current_context();
    CUDA_RESOURCE_DESC resource{};
    resource.resType = CU_RESOURCE_TYPE_ARRAY;
    resource.res.array.hArray = array.get();
    KILN_CU(cuSurfObjectCreate(&m_surface, &resource));
}

Surface::~Surface() {
    // A handle exists only once the driver loaded; destructors never throw.
    if (m_surface) detail::driver().cuSurfObjectDestroy(m_surface);
}

Surface::Surface(Surface&& other) noexcept
    : m_owned(std::move(other.m_owned))
    , m_surface(std::exchange(other.m_surface, 0)) {}

Surface& Surface::operator=(Surface&& other) noexcept {
    if (this != &other) {
        if (m_surface) detail::driver().cuSurfObjectDestroy(m_surface);
        m_surface = std::exchange(other.m_surface, 0);
        m_owned = std::move(other.m_owned);
    }
    return *this;
}

} // namespace kiln
