#pragma once
/// @file
/// kiln::CudaArray: a move-only CUDA array (the opaque, cache-friendly layout textures and
/// surfaces read and write), 1-, 2- or 3-dimensional, of 1, 2 or 4 channels of float32, float16
/// or 8-, 16- or 32-bit integers. Made from a kiln::Array (copied in) or empty, and copied back
/// into an Array. kiln::Texture and kiln::Surface (texture.hpp, surface.hpp) view one.

#include "kiln/array.hpp"
#include "kiln/stream.hpp"

#include <cuda.h>

#include <cstddef>
#include <memory>

namespace kiln {

/// The shape of a CudaArray: its extents, its element type and whether surfaces may use it.
struct CudaArrayFormat {
    /// @{
    /// `width`, `height`, `depth`: the extents in elements; `height` and `depth` are 0 for a
    /// 1-D array, `depth` 0 for a 2-D one, as the driver counts them.
    std::size_t width = 0, height = 0, depth = 0;
    /// @}
    /// The type of one channel: float32, float16, int8, int16, int32, uint8, uint16 or uint32.
    DType dtype = DType::float32;
    /// Channels per element: 1, 2 or 4 (float2, uchar4, ...).
    int channels = 1;
    /// Whether a Surface may be made over the array (CUDA_ARRAY3D_SURFACE_LDST).
    bool surface_load_store = false;

    /// The number of dimensions.
    /// @return 1, 2 or 3.
    int ndim() const noexcept { return depth ? 3 : height ? 2 : 1; }
};

/// A CUDA array, owned: destroyed with the object. Move-only. Made in the current context; the
/// copies in and out are queued on a stream and waited for, as Array's host copies are.
///
/// A kiln::Array maps onto it with the channels as the last dimension: a (h, w) float32 Array is
/// a 2-D array of one channel; a (h, w, 4) uint8 Array with `channels = 4` one of uchar4. The
/// Array's shape, without the channel dimension, is (w), (h, w) or (d, h, w), C order.
///
/// @code
/// kiln::Array image = kiln::from_host(pixels, {480, 640, 4});      // uint8 RGBA
/// kiln::CudaArray rgba = kiln::CudaArray::from(image, 4);
/// @endcode
class CudaArray {
  public:
    /// No array.
    CudaArray() = default;
    /// An array of @p format with undefined elements (for a surface to write).
    /// @param format the extents, type, channels and surface flag.
    /// @throws ArgumentError for an unsupported type, channel count or extent; NoDeviceError;
    /// CudaError.
    explicit CudaArray(const CudaArrayFormat& format);
    /// A CUDA array holding a copy of @p source (C-contiguous, see the class notes), copied with
    /// cuMemcpy2D (1-D, 2-D) or cuMemcpy3D (3-D) on @p stream; returns when the copy is done.
    /// @param source the elements; its last dimension is the channels when @p channels > 1.
    /// @param channels 1, 2 or 4.
    /// @param surface_load_store whether a Surface may be made over the array.
    /// @param stream the stream the copy is queued on.
    /// @return the array.
    /// @throws ArgumentError for a non-contiguous @p source, an unsupported dtype or shape;
    /// NoDeviceError; CudaError.
    static CudaArray from(const Array& source, int channels = 1, bool surface_load_store = false,
                          StreamRef stream = {});

    /// Destroys the array. The caller orders work that uses it (textures, surfaces, kernels) before
    /// the destruction.
    ~CudaArray();
    /// Takes @p other's array; @p other is left empty.
    /// @param other the array to take.
    CudaArray(CudaArray&& other) noexcept;
    /// Destroys this array, then takes @p other's.
    /// @param other the array to take.
    /// @return this array.
    CudaArray& operator=(CudaArray&& other) noexcept;
    CudaArray(const CudaArray&) = delete;
    CudaArray& operator=(const CudaArray&) = delete;

    /// Overwrite the elements from @p source, shaped as from() takes it.
    /// @param source a C-contiguous array of the matching dtype and shape.
    /// @param stream the stream the copy is queued on; returns when the copy is done.
    /// @throws ArgumentError (dtype, shape, layout), CudaError.
    void copy_from(const Array& source, StreamRef stream = {}) const;
    /// Copy the elements into @p destination, shaped as from() takes it.
    /// @param destination a C-contiguous array of the matching dtype and shape.
    /// @param stream the stream the copy is queued on; returns when the copy is done.
    /// @throws ArgumentError (dtype, shape, layout), CudaError.
    void copy_to(const Array& destination, StreamRef stream = {}) const;
    /// A new Array with a copy of the elements, shaped as from() takes it.
    /// @param stream the stream the allocation and copy are ordered on.
    /// @return the Array.
    Array to_array(StreamRef stream = {}) const;

    /// The driver handle (null when empty).
    /// @return the handle.
    CUarray get() const noexcept { return m_array.get(); }
    /// The extents, type, channels and surface flag.
    /// @return the format.
    const CudaArrayFormat& format() const noexcept { return m_format; }
    /// The Array shape that matches the array: (w), (h, w) or (d, h, w), then the channels when
    /// there are several.
    /// @return the shape.
    Dims shape() const;

  private:
    struct Destroy {
        void operator()(CUarray_st* array) const noexcept;
    };
    void copy(const Array& host_side, bool into_array, StreamRef stream) const;

    std::unique_ptr<CUarray_st, Destroy> m_array;
    CudaArrayFormat m_format;
};

} // namespace kiln
