#pragma once
/// @file
/// kiln::Surface: a move-only surface object over a CudaArray made with `surface_load_store`, for
/// kernels that read and write the array (`surf2Dwrite`, `surf2Dread`). Passed by value to kernels,
/// which take a `cudaSurfaceObject_t` (a 64-bit handle).

#include "kiln/cuda_array.hpp"
#include "kiln/launch.hpp"

#include <cuda.h>

namespace kiln {

/// A surface object over a CudaArray, owned: destroyed with the object. Move-only. Made in the
/// current context. Surface coordinates count bytes along x (`x * sizeof(element)`), elements
/// along y and z, as CUDA's surface functions take them.
///
/// Lifetime: a Surface made from a `const CudaArray&` views it, and the array must outlive the
/// surface; one made from a `CudaArray&&` owns it. Work that uses the surface must be ordered
/// before its destruction.
///
/// @code
/// kiln::CudaArray target(kiln::CudaArrayFormat{64, 64, 0, kiln::DType::float32, 1, true});
/// kiln::Surface surface(target);
/// kernel(grid, block, surface);   // __global__ void k(cudaSurfaceObject_t s) { surf2Dwrite ... }
/// kiln::Array written = target.to_array();
/// @endcode
class Surface {
  public:
    /// No surface (handle 0).
    Surface() = default;
    /// A surface over @p array, which must outlive it.
    /// @param array an array made with `surface_load_store`.
    /// @throws ArgumentError for an empty array or one made without `surface_load_store`;
    /// NoDeviceError; CudaError.
    explicit Surface(const CudaArray& array);
    /// A surface that owns @p array.
    /// @param array the array, taken.
    /// @throws as above.
    explicit Surface(CudaArray&& array);
    /// Destroys the surface object (and the array it owns).
    ~Surface();
    /// Takes @p other's surface; @p other is left empty.
    /// @param other the surface to take.
    Surface(Surface&& other) noexcept;
    /// Destroys this surface, then takes @p other's.
    /// @param other the surface to take.
    /// @return this surface.
    Surface& operator=(Surface&& other) noexcept;
    Surface(const Surface&) = delete;
    Surface& operator=(const Surface&) = delete;

    /// The handle kernels take as `cudaSurfaceObject_t`.
    /// @return the handle (0 when empty).
    CUsurfObject get() const noexcept { return m_surface; }
    /// The array the surface owns; empty when it views one.
    /// @return the owned array.
    const CudaArray& owned_array() const noexcept { return m_owned; }

  private:
    void create(const CudaArray& array);

    CudaArray m_owned;
    CUsurfObject m_surface = 0;
};

} // namespace kiln
