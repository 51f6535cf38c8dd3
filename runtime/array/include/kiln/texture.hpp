#pragma once
/// @file
/// kiln::Texture: a move-only texture object over a CudaArray, with its filtering, addressing and
/// read mode. Passed by value to kernels, which take a `cudaTextureObject_t` (a 64-bit handle):
/// `kernel(grid, block, texture, out)` with RawKernel, a `cudaTextureObject_t` (or placeholder)
/// parameter with ElementwiseKernel.

#include "kiln/cuda_array.hpp"
#include "kiln/launch.hpp"

#include <cuda.h>

#include <array>
#include <cstdint>

namespace kiln {

/// What a coordinate outside [0, size) reads (CUDA's cudaTextureAddressMode). `wrap` and `mirror`
/// need normalized coordinates; without them the hardware clamps.
enum class AddressMode : std::uint8_t {
    wrap,   ///< repeat: the coordinate modulo the size
    clamp,  ///< the nearest edge element
    mirror, ///< repeat, every other copy reversed
    border, ///< the border colour (zero unless set)
};

/// How a texture reads between elements (CUDA's cudaTextureFilterMode).
enum class FilterMode : std::uint8_t {
    point,  ///< the element the coordinate falls in
    linear, ///< linear (bi-, trilinear) interpolation of the nearest 2, 4 or 8 elements; float
            ///< results only, with 9-bit fixed-point weights (steps of 1/256)
};

/// What a texture of integers returns (CUDA's cudaTextureReadMode).
enum class ReadMode : std::uint8_t {
    element,          ///< the integer as stored
    normalized_float, ///< 8- and 16-bit integers as floats in [0, 1] (unsigned) or [-1, 1]
};

/// How a texture samples its array.
struct TextureOptions {
    /// Per dimension (x, y, z), what coordinates outside the array read.
    std::array<AddressMode, 3> address{AddressMode::clamp, AddressMode::clamp, AddressMode::clamp};
    /// Point or linear filtering.
    FilterMode filter = FilterMode::point;
    /// What integer textures return.
    ReadMode read = ReadMode::element;
    /// Coordinates in [0, 1) over each dimension instead of [0, size).
    bool normalized_coordinates = false;
    /// The value `border` addressing reads, per channel.
    std::array<float, 4> border_color{};

    /// The same address mode on every dimension.
    /// @param mode the mode.
    /// @return these options, for chaining.
    TextureOptions& address_all(AddressMode mode) noexcept {
        address = {mode, mode, mode};
        return *this;
    }
};

/// A texture object over a CudaArray, owned: destroyed with the object. Move-only. Made in the
/// current context.
///
/// Lifetime: a Texture made from a `const CudaArray&` views it, and the array must outlive the
/// texture; one made from a `CudaArray&&` owns it. Work that reads the texture must be ordered
/// before its destruction.
///
/// @code
/// kiln::Texture tex(kiln::CudaArray::from(image),
///                   kiln::TextureOptions{}.address_all(kiln::AddressMode::border));
/// kernel(grid, block, tex, out);    // __global__ void k(cudaTextureObject_t tex, float* out)
/// @endcode
class Texture {
  public:
    /// No texture (handle 0).
    Texture() = default;
    /// A texture over @p array, which must outlive it.
    /// @param array the elements.
    /// @param options filtering, addressing, read mode, coordinates.
    /// @throws ArgumentError for an empty array, linear filtering of integers read as elements,
    /// or normalized floats from 32-bit integers; NoDeviceError; CudaError.
    explicit Texture(const CudaArray& array, const TextureOptions& options = {});
    /// A texture that owns @p array.
    /// @param array the elements, taken.
    /// @param options as above.
    /// @throws as above.
    explicit Texture(CudaArray&& array, const TextureOptions& options = {});
    /// Destroys the texture object (and the array it owns).
    ~Texture();
    /// Takes @p other's texture; @p other is left empty.
    /// @param other the texture to take.
    Texture(Texture&& other) noexcept;
    /// Destroys this texture, then takes @p other's.
    /// @param other the texture to take.
    /// @return this texture.
    Texture& operator=(Texture&& other) noexcept;
    Texture(const Texture&) = delete;
    Texture& operator=(const Texture&) = delete;

    /// The handle kernels take as `cudaTextureObject_t`.
    /// @return the handle (0 when empty).
    CUtexObject get() const noexcept { return m_texture; }
    /// The options the texture was made with.
    /// @return the options.
    const TextureOptions& options() const noexcept { return m_options; }
    /// The array the texture owns; empty when it views one.
    /// @return the owned array.
    const CudaArray& owned_array() const noexcept { return m_owned; }

  private:
    void create(const CudaArray& array);

    CudaArray m_owned;
    TextureOptions m_options;
    CUtexObject m_texture = 0;
};

} // namespace kiln
