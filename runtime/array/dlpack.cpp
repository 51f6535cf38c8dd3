#include "kiln/dlpack.hpp"

#include "driver/driver.hpp"
#include "kiln/error.hpp"

#include <dlpack/dlpack.h>

#include <memory>
#include <string>

namespace kiln {

namespace {

DType dtype_from(DLDataType type) {
    const auto unsupported = [&] {
        return ArgumentError("from_dlpack: DLPack dtype (code " + std::to_string(type.code) +
                             ", bits " + std::to_string(type.bits) + ", lanes " +
                             std::to_string(type.lanes) + ") has no Kiln dtype");
    };
    if (type.lanes != 1) throw unsupported();
    switch (type.code) {
    case kDLInt:
        switch (type.bits) {
        case 8:
            return DType::int8;
        case 16:
            return DType::int16;
        case 32:
            return DType::int32;
        case 64:
            return DType::int64;
        }
        break;
    case kDLUInt:
        switch (type.bits) {
        case 8:
            return DType::uint8;
        case 16:
            return DType::uint16;
        case 32:
            return DType::uint32;
        case 64:
            return DType::uint64;
        }
        break;
    case kDLFloat:
        switch (type.bits) {
        case 16:
            return DType::float16;
        case 32:
            return DType::float32;
        case 64:
            return DType::float64;
        }
        break;
    case kDLBfloat:
        if (type.bits == 16) return DType::bfloat16;
        break;
    case kDLComplex:
        if (type.bits == 64) return DType::complex64;
        if (type.bits == 128) return DType::complex128;
        break;
    case kDLPackBoolCode:
        if (type.bits == 8) return DType::bool_;
        break;
    default:
        break;
    }
    throw unsupported();
}

DLDataType dtype_to(DType dtype) {
    DLDataType type{};
    type.lanes = 1;
    type.bits = static_cast<std::uint8_t>(itemsize(dtype) * 8);
    if (is_bool(dtype))
        type.code = kDLPackBoolCode;
    else if (is_signed_integer(dtype))
        type.code = kDLInt;
    else if (is_unsigned_integer(dtype))
        type.code = kDLUInt;
    else if (dtype == DType::bfloat16)
        type.code = kDLBfloat;
    else if (is_floating(dtype))
        type.code = kDLFloat;
    else
        type.code = kDLComplex;
    return type;
}

// Where the driver says @p pointer lives; kDLCUDA on device 0 when it cannot tell (no driver,
// or memory it does not know).
DLDevice device_of(CUdeviceptr pointer) {
    DLDevice device{kDLCUDA, 0};
    if (!pointer || !detail::driver_available()) return device;
    const detail::Driver& d = detail::driver();
    int ordinal = 0;
    if (d.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, pointer) ==
        CUDA_SUCCESS)
        device.device_id = ordinal;
    unsigned int managed = 0;
    if (d.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, pointer) ==
            CUDA_SUCCESS &&
        managed)
        device.device_type = kDLCUDAManaged;
    return device;
}

// What to_dlpack allocates: the tensor, its shape and strides, and the array that keeps the
// memory alive. manager_ctx points here; the deleter deletes it.
struct Export {
    DLManagedTensor tensor{};
    std::int64_t shape[kMaxDims] = {};
    std::int64_t strides[kMaxDims] = {};
    Array array;
};

void delete_export(DLManagedTensor* tensor) {
    if (tensor) delete static_cast<Export*>(tensor->manager_ctx);
}

void call_deleter(void* pointer) {
    auto* tensor = static_cast<DLManagedTensor*>(pointer);
    if (tensor->deleter) tensor->deleter(tensor);
}

} // namespace

Array from_dlpack(DLManagedTensor* managed) {
    if (!managed) throw ArgumentError("from_dlpack: the tensor is null");
    const DLTensor& t = managed->dl_tensor;
    if (t.device.device_type != kDLCUDA && t.device.device_type != kDLCUDAManaged)
        throw ArgumentError("from_dlpack: the tensor is on DLPack device type " +
                            std::to_string(static_cast<int>(t.device.device_type)) +
                            "; Kiln takes CUDA device memory (kDLCUDA = 2) or managed memory "
                            "(kDLCUDAManaged = 13): copy it to the GPU first");
    if (t.ndim < 0 || t.ndim > kMaxDims)
        throw ArgumentError("from_dlpack: the tensor has " + std::to_string(t.ndim) +
                            " dimensions; Kiln takes 0 to " + std::to_string(kMaxDims));
    if (t.ndim > 0 && !t.shape) throw ArgumentError("from_dlpack: the tensor has no shape");
    const DType dtype = dtype_from(t.dtype);
    Dims shape, strides;
    for (int i = 0; i < t.ndim; ++i) {
        if (t.shape[i] < 0)
            throw ArgumentError("from_dlpack: extent " + std::to_string(t.shape[i]) +
                                " of dimension " + std::to_string(i) + " is negative");
        shape.push_back(t.shape[i]);
    }
    if (t.strides) {
        for (int i = 0; i < t.ndim; ++i)
            strides.push_back(t.strides[i] * static_cast<std::int64_t>(itemsize(dtype)));
    } else {
        strides = c_strides(shape, itemsize(dtype));
    }
    const CUdeviceptr data = reinterpret_cast<CUdeviceptr>(t.data) + t.byte_offset;
    // From here the array owns the tensor; if making the owner fails, shared_ptr calls the
    // deleter itself.
    std::shared_ptr<void> owner(static_cast<void*>(managed), call_deleter);
    // The tensor names its device; managed memory is usable from any, so it records none.
    const int device = t.device.device_type == kDLCUDA ? static_cast<int>(t.device.device_id) : -1;
    return Array::wrap(data, shape, dtype, strides, std::move(owner), device);
}

DLManagedTensor* to_dlpack(const Array& array) {
    const auto item = static_cast<std::int64_t>(array.itemsize());
    for (int i = 0; i < array.ndim(); ++i)
        if (array.strides()[i] % item != 0)
            throw ArgumentError("to_dlpack: stride " + std::to_string(array.strides()[i]) +
                                " bytes of dimension " + std::to_string(i) +
                                " is not a multiple of the itemsize " + std::to_string(item) +
                                "; DLPack counts strides in elements");
    auto exported = std::make_unique<Export>();
    exported->array = array;
    for (int i = 0; i < array.ndim(); ++i) {
        exported->shape[i] = array.shape()[i];
        exported->strides[i] = array.strides()[i] / item;
    }
    DLTensor& t = exported->tensor.dl_tensor;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): DLPack holds device addresses as void*
    t.data = reinterpret_cast<void*>(array.data());
    t.device = device_of(array.data());
    t.ndim = array.ndim();
    t.dtype = dtype_to(array.dtype());
    t.shape = exported->shape;
    t.strides = exported->strides;
    t.byte_offset = 0;
    exported->tensor.manager_ctx = exported.get();
    exported->tensor.deleter = delete_export;
    return &exported.release()->tensor;
}

} // namespace kiln
