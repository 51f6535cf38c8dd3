#pragma once
/// @file
/// DLPack import and export: arrays pass to and from other GPU libraries (PyTorch, CuPy, JAX...)
/// without copies. Include <dlpack/dlpack.h> (Debian: libdlpack-dev) to build or read the tensors;
/// this header only declares the type.
///
/// @code
/// DLManagedTensor* exported = kiln::to_dlpack(array);  // hand it to another library
/// kiln::Array imported = kiln::from_dlpack(tensor);     // same memory, no copy
/// @endcode

#include "kiln/array.hpp"

struct DLManagedTensor;

namespace kiln {

/// Code of DLPack's bool type (kDLBool, added in DLPack 0.8; absent from 0.6's header). Kiln reads
/// and writes bool arrays with this code and 8 bits.
inline constexpr std::uint8_t kDLPackBoolCode = 6;

/// An Array viewing @p tensor's memory, taking ownership of it: the tensor's deleter is called
/// once, when the last view of the returned array (or of any array made from it) is destroyed.
/// Accepts CUDA device memory (kDLCUDA) and managed memory (kDLCUDAManaged); strides in elements
/// (nullptr for C order) and byte_offset as DLPack defines them. The device id is not checked:
/// use the array in a context of that device.
/// @throws ArgumentError (and leaves the tensor with the caller, deleter not called) for a null
/// tensor, another device type, a dtype Kiln lacks, vector lanes, more than kMaxDims dimensions or
/// negative extents.
/// @param tensor the tensor; on success Kiln owns it.
/// @return a view of the tensor's memory.
Array from_dlpack(DLManagedTensor* tensor);

/// A DLPack tensor viewing @p array's memory (no copy), with the array's shape, dtype and
/// element strides, on kDLCUDA (kDLCUDAManaged for managed memory) and the device the driver
/// reports for the pointer (0 when it cannot tell). The tensor keeps the array's memory alive
/// until its deleter is called; the deleter frees what to_dlpack allocated. Whoever receives it
/// must call the deleter exactly once.
/// @throws ArgumentError when a stride is not a multiple of the itemsize (DLPack counts strides
/// in elements).
/// @param array the array to export.
/// @return the tensor, owned by whoever receives it.
DLManagedTensor* to_dlpack(const Array& array);

} // namespace kiln
