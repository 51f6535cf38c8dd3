#pragma once
/// @file
/// kiln::Texture: a move-only texture object over a CudaArray or over an Array's own memory (1-D
/// linear or 2-D pitched, as CuPy's ResourceDescriptor's linear and pitch2D resources), with its
/// filtering, addressing and read mode. Passed by value to kernels, which take a
/// `cudaTextureObject_t` (a 64-bit handle): `kernel(grid, block, texture, out)` with RawKernel, a
/// `cudaTextureObject_t` (or placeholder) parameter with ElementwiseKernel. kiln::empty_pitched
/// allocates an Array whose rows a 2-D texture can read.

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

/// The memory a texture reads (CUDA's resource types).
enum class TextureResource : std::uint8_t {
    cuda_array, ///< a CudaArray, 1-, 2- or 3-D: `tex1D`, `tex2D`, `tex3D`, every sampling mode
    linear,     ///< a 1-D Array's memory: `tex1Dfetch<T>(t, i)` at integer indices, point
                ///< sampling, zero outside [0, n)
    pitch2d,    ///< a 2-D Array's rows at its row stride: `tex2D`, every sampling mode
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

/// A texture object over a CudaArray or over an Array's memory, owned: destroyed with the object.
/// Move-only. Made in the current context.
///
/// Lifetime: a Texture made from a `const CudaArray&` views it, and the array must outlive the
/// texture; one made from a `CudaArray&&` owns it. One made from an Array keeps a copy of the
/// view, so an owning Array's memory lives as long as the texture (wrapped memory must outlive
/// it). Work that reads the texture must be ordered before its destruction.
///
/// @code
/// kiln::Texture tex(kiln::CudaArray::from(image),
///                   kiln::TextureOptions{}.address_all(kiln::AddressMode::border));
/// kernel(grid, block, tex, out);    // __global__ void k(cudaTextureObject_t tex, float* out)
/// kiln::Array rows = kiln::empty_pitched({480, 640}, kiln::DType::float32);
/// kiln::copy(rows, image);          // rows padded to the device's texture pitch alignment
/// kiln::Texture pitched(rows);      // tex2D<float>(t, x, y) over the Array's own memory
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
    /// A texture over @p array's own memory, no copy: a 1-D array is a linear resource
    /// (TextureResource::linear, read with `tex1Dfetch`), a 2-D one a pitched resource
    /// (TextureResource::pitch2d, read with `tex2D`) whose rows lie `array.strides()[0]` bytes
    /// apart. With @p channels > 1 the last dimension is the channels, as CudaArray::from takes
    /// it. The elements of a row must be contiguous; the first element must sit at a multiple of
    /// the device's texture alignment and, in 2-D, the row stride must be a multiple of its
    /// texture pitch alignment: kiln::empty_pitched allocates such arrays.
    /// @param array the memory, of float32, float16 or an 8-, 16- or 32-bit integer type; the
    /// texture keeps a copy of the view.
    /// @param options filtering, addressing, read mode, coordinates; a linear texture takes
    /// point filtering, unnormalized coordinates and the default address mode only (the
    /// hardware applies neither filtering nor addressing to it).
    /// @param channels 1, 2 or 4.
    /// @throws ArgumentError for an empty array, an unsupported dtype or channel count, more than
    /// two dimensions, rows that are not contiguous or run backwards, memory not aligned as the
    /// device asks, extents over its limits, the options as above; NoDeviceError; CudaError.
    explicit Texture(const Array& array, const TextureOptions& options = {}, int channels = 1);
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
    /// The Array whose memory the texture reads; empty for a texture over a CudaArray.
    /// @return the view the texture keeps.
    const Array& viewed_memory() const noexcept { return m_memory; }
    /// The kind of memory the texture reads.
    /// @return cuda_array, linear or pitch2d.
    TextureResource resource() const noexcept { return m_resource; }

  private:
    void create(const CudaArray& array);
    void create(const CUDA_RESOURCE_DESC& resource, DType dtype, int ndim);

    CudaArray m_owned;
    Array m_memory;
    TextureOptions m_options;
    TextureResource m_resource = TextureResource::cuda_array;
    CUtexObject m_texture = 0;
};

/// An uninitialized array whose memory a texture can read in place (kiln::Texture over an Array):
/// its first element at a multiple of the current device's texture alignment and, for two or
/// more dimensions, each row (the elements of one index of the first dimension) starting a
/// multiple of the device's texture pitch alignment after the previous one, padded at its end.
/// `strides()[0]` is that pitch in bytes; the other strides are C order. Fill it with
/// kiln::copy (from any array of the same shape) or a kernel; its padding is never read.
/// @code
/// kiln::Array rows = kiln::empty_pitched({100, 33}, kiln::DType::float32);   // pitch 160 bytes
/// kiln::copy(rows, values);
/// kiln::Texture t(rows, kiln::TextureOptions{}.address_all(kiln::AddressMode::clamp));
/// @endcode
/// @param shape the extents: (w), (h, w), or (h, w, channels) for a texture of several channels.
/// @param dtype the element type.
/// @param stream the stream the allocation is ordered on.
/// @return the array (owning its memory, as empty() does).
/// @throws ArgumentError for a 0-d shape; as empty().
Array empty_pitched(Dims shape, DType dtype, StreamRef stream = {});

} // namespace kiln
