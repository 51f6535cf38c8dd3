#pragma once
/// @file
/// Launch geometry and argument packing. Packing builds two arrays on the stack: the addresses of
/// the arguments and their sizes (a compile-time constant); nothing is allocated per launch.

#include "kiln/memory.hpp"
#include "kiln/stream.hpp"

#include <array>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace kiln {

class Texture;
class Surface;

/// Grid or block dimensions.
struct Dim3 {
    /// @{
    /// `x`, `y`, `z`: the extents along each direction; 1 where not given.
    unsigned x = 1, y = 1, z = 1;
    /// @}
    /// 1 × 1 × 1.
    constexpr Dim3() = default;
    /// Dimensions from one to three extents: `{256}` is 256 × 1 × 1.
    /// @param x_ the extent along x.
    /// @param y_ the extent along y.
    /// @param z_ the extent along z.
    // NOLINTNEXTLINE(google-explicit-constructor,readability-identifier-naming): `{256}`; x_ vs x
    constexpr Dim3(unsigned x_, unsigned y_ = 1, unsigned z_ = 1)
        : x(x_)
        , y(y_)
        , z(z_) {}
};

/// Where and how to launch.
struct LaunchConfig {
    /// Blocks in the grid; none of the extents may be 0.
    Dim3 grid;
    /// Threads per block, within the kernel's and the device's limits.
    Dim3 block;
    /// Dynamic shared memory in bytes. Over 48 KiB, the kernel's maximum is raised as needed.
    std::size_t shared_memory = 0;
    /// The stream the launch is queued on.
    StreamRef stream;
    /// Launch cooperatively (grid-wide synchronization); the grid must fit on the device at once.
    bool cooperative = false;
    /// The device to launch on; -1: the current context's. RawKernel makes its primary context
    /// current for the launch; Function::launch checks that the kernel was loaded there.
    int device = -1;
};

namespace detail {

// How an argument is passed: trivially copyable values by value, DeviceBuffers as their pointer,
// Textures and Surfaces as their handles.
template <class T> const T& kernel_argument(const T& value) noexcept {
    static_assert(std::is_trivially_copyable_v<T>,
                  "kernel arguments must be trivially copyable (pointers, scalars, plain structs) "
                  "or kiln::DeviceBuffer, kiln::Texture, kiln::Surface");
    return value;
}
inline CUdeviceptr kernel_argument(const DeviceBuffer& buffer) noexcept {
    return buffer.get();
}
// Textures and surfaces pass as their 64-bit handles (texture.cpp, surface.cpp).
CUtexObject kernel_argument(const Texture& texture) noexcept;
CUsurfObject kernel_argument(const Surface& surface) noexcept;

template <class T>
using kernel_argument_t = std::decay_t<decltype(kernel_argument(std::declval<const T&>()))>;

/// The arguments of one launch, held (by reference where possible) until the launch is queued.
template <class... Args> class PackedArguments {
  public:
    explicit PackedArguments(const Args&... args) noexcept
        : m_values(kernel_argument(args)...)
        , m_pointers(pointers(std::index_sequence_for<Args...>{})) {}
    PackedArguments(const PackedArguments&) = delete;
    PackedArguments& operator=(const PackedArguments&) = delete;

    void** pointers() noexcept { return m_pointers.data(); }
    static constexpr std::size_t count() noexcept { return sizeof...(Args); }
    static const std::size_t* sizes() noexcept { return kSizes.data(); }

  private:
    template <std::size_t... I>
    std::array<void*, sizeof...(Args) + 1> pointers(std::index_sequence<I...>) noexcept {
        // +1 keeps the array non-empty for kernels without parameters.
        return {const_cast<void*>(static_cast<const void*>(&std::get<I>(m_values)))..., nullptr};
    }
    static constexpr std::array<std::size_t, sizeof...(Args) + 1> kSizes{
        sizeof(kernel_argument_t<Args>)..., 0};

    std::tuple<decltype(kernel_argument(std::declval<const Args&>()))...> m_values;
    std::array<void*, sizeof...(Args) + 1> m_pointers;
};

} // namespace detail

} // namespace kiln
