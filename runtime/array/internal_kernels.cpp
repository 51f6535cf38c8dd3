#include "internal_kernels.hpp"

#include "driver/driver.hpp"
#include "driver/per_context_cache.hpp"
#include "kiln/compiler.hpp"
#include "kiln/device.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

namespace {

// Grid-stride loops over 64-bit counts. The 16-bit float conversion is the host's
// (dtype.cpp, round_to_16) written for the device, so device and host round alike without
// cuda_fp16.h. Compiled with --fmad=false so start + i * step rounds as on the host.
constexpr const char* kSource = R"(
#define KILN_FOR_EACH(i, n)                                                                      \
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;     \
         i < (n); i += (unsigned long long)gridDim.x * blockDim.x)

extern "C" __global__ void kiln_fill_pattern64(unsigned long long* out, unsigned long long even,
                                               unsigned long long odd, unsigned long long words) {
    KILN_FOR_EACH(i, words) out[i] = (i & 1) ? odd : even;
}

__device__ unsigned short kiln_round_to_16(bool negative, unsigned long long m, int e, int p,
                                           int bias) {
    const unsigned int sign = negative ? 0x8000u : 0u;
    const int emin = 1 - bias;
    const unsigned int infinity = (unsigned int)(2 * bias + 1) << p;
    const int exponent = 63 - __clzll((long long)m) + e;
    if (exponent > bias + 1) return (unsigned short)(sign | infinity);
    const bool normal = exponent >= emin;
    const int quantum = (normal ? exponent : emin) - p;
    const int shift = quantum - e;
    unsigned long long n = 0;
    if (shift <= 0) {
        n = m << -shift;
    } else if (shift <= 64) {
        const unsigned long long kept = shift == 64 ? 0ull : m >> shift;
        const unsigned long long rest = shift == 64 ? m : m & ((1ull << shift) - 1);
        const unsigned long long half = 1ull << (shift - 1);
        n = kept + ((rest > half || (rest == half && (kept & 1))) ? 1ull : 0ull);
    }
    unsigned int bits = normal ? ((unsigned int)(exponent + bias - 1) << p) + (unsigned int)n
                               : (unsigned int)n;
    if (bits >= infinity) bits = infinity;
    return (unsigned short)(sign | bits);
}

__device__ unsigned short kiln_double_to_16(double value, int p, int bias) {
    const unsigned long long bits = (unsigned long long)__double_as_longlong(value);
    const bool negative = (bits >> 63) != 0;
    const unsigned int sign = negative ? 0x8000u : 0u;
    const int exponent_field = (int)((bits >> 52) & 0x7ff);
    const unsigned long long fraction = bits & ((1ull << 52) - 1);
    const unsigned int ones = (unsigned int)(2 * bias + 1) << p;
    if (exponent_field == 0x7ff) {
        if (fraction == 0) return (unsigned short)(sign | ones);
        return (unsigned short)(sign | ones | (unsigned int)(fraction >> (52 - p)) |
                                (1u << (p - 1)));
    }
    if (exponent_field == 0 && fraction == 0) return (unsigned short)sign;
    const unsigned long long m = exponent_field ? (fraction | (1ull << 52)) : fraction;
    const int e = (exponent_field ? exponent_field : 1) - 1075;
    return kiln_round_to_16(negative, m, e, p, bias);
}

__device__ double kiln_arange_value(double start, double step, unsigned long long i) {
    return start + (double)i * step;
}

// Floating to integer as cast_scalar does: truncate, saturate at the limits, NaN to 0.
#define KILN_ARANGE_INTEGER(NAME, T, LOW, HIGH)                                                \
    extern "C" __global__ void kiln_arange_##NAME(T* out, double start, double step,           \
                                                  unsigned long long n) {                     \
        KILN_FOR_EACH(i, n) {                                                                  \
            const double v = kiln_arange_value(start, step, i);                                \
            out[i] = v != v ? (T)0 : v <= (double)(LOW) ? (T)(LOW) : v >= (double)(HIGH)      \
                                                                      ? (T)(HIGH) : (T)v;     \
        }                                                                                      \
    }
KILN_ARANGE_INTEGER(int8, signed char, -128, 127)
KILN_ARANGE_INTEGER(int16, short, -32768, 32767)
KILN_ARANGE_INTEGER(int32, int, -2147483647 - 1, 2147483647)
KILN_ARANGE_INTEGER(int64, long long, -9223372036854775807LL - 1, 9223372036854775807LL)
KILN_ARANGE_INTEGER(uint8, unsigned char, 0, 255)
KILN_ARANGE_INTEGER(uint16, unsigned short, 0, 65535)
KILN_ARANGE_INTEGER(uint32, unsigned int, 0u, 4294967295u)
KILN_ARANGE_INTEGER(uint64, unsigned long long, 0ull, 18446744073709551615ull)

extern "C" __global__ void kiln_arange_bool(bool* out, double start, double step,
                                            unsigned long long n) {
    KILN_FOR_EACH(i, n) out[i] = kiln_arange_value(start, step, i) != 0.0;
}

extern "C" __global__ void kiln_arange_float16(unsigned short* out, double start, double step,
                                               unsigned long long n) {
    KILN_FOR_EACH(i, n) out[i] = kiln_double_to_16(kiln_arange_value(start, step, i), 10, 15);
}

extern "C" __global__ void kiln_arange_bfloat16(unsigned short* out, double start, double step,
                                                unsigned long long n) {
    KILN_FOR_EACH(i, n) out[i] = kiln_double_to_16(kiln_arange_value(start, step, i), 7, 127);
}

extern "C" __global__ void kiln_arange_float32(float* out, double start, double step,
                                               unsigned long long n) {
    KILN_FOR_EACH(i, n) out[i] = (float)kiln_arange_value(start, step, i);
}

extern "C" __global__ void kiln_arange_float64(double* out, double start, double step,
                                               unsigned long long n) {
    KILN_FOR_EACH(i, n) out[i] = kiln_arange_value(start, step, i);
}

extern "C" __global__ void kiln_arange_complex64(float* out, double start, double step,
                                                 unsigned long long n) {
    KILN_FOR_EACH(i, n) {
        out[2 * i] = (float)kiln_arange_value(start, step, i);
        out[2 * i + 1] = 0.0f;
    }
}

extern "C" __global__ void kiln_arange_complex128(double* out, double start, double step,
                                                  unsigned long long n) {
    KILN_FOR_EACH(i, n) {
        out[2 * i] = kiln_arange_value(start, step, i);
        out[2 * i + 1] = 0.0;
    }
}
)";

constexpr unsigned kBlock = 256;

Dim3 grid_for(std::size_t count) {
    const std::size_t blocks = (count + kBlock - 1) / kBlock;
    // Grid-stride loops cover the rest; this many blocks saturate any current GPU.
    return Dim3(static_cast<unsigned>(std::min<std::size_t>(blocks, std::size_t{1} << 16)));
}

// The module in one context, with each of its kernels looked up once: read-only afterwards.
struct Loaded {
    std::shared_ptr<const Module> module;
    std::map<std::string, Function, std::less<>> functions;
};

const Loaded& loaded_in(CUcontext context) {
    // Deliberately never destroyed: modules must not be unloaded after the driver shut down.
    static auto* cache = new PerContextCache<Loaded>;
    return cache->get(context, {}, [] {
        CompileOptions options;
        options.arch = Device::current().arch();
        options.options = {"--fmad=false"};
        Loaded loaded;
        loaded.module = Module::load(Compiler::global().compile(kSource, options), options);
        std::vector<std::string> names{"kiln_fill_pattern64"};
        for (int d = 0; d < kDTypeCount; ++d)
            names.push_back(std::string("kiln_arange_") + name(static_cast<DType>(d)));
        for (const std::string& kernel : names)
            loaded.functions.emplace(kernel, loaded.module->function(kernel));
        return loaded;
    });
}

template <class T> T load_as(const void* bytes) {
    T value;
    std::memcpy(&value, bytes, sizeof value);
    return value;
}

void check_alignment(CUdeviceptr pointer, std::size_t alignment) {
    if (pointer % alignment != 0)
        throw ArgumentError("cannot fill device memory at " + std::to_string(pointer) +
                            ": it is not aligned to " + std::to_string(alignment) + " bytes");
}

} // namespace

const char* internal_kernel_source() {
    return kSource;
}

const Function& internal_function(const char* name) {
    const Loaded& loaded = loaded_in(current_context());
    const auto found = loaded.functions.find(std::string_view(name));
    if (found == loaded.functions.end())
        throw ArgumentError(std::string("no internal kernel named '") + name + "'");
    return found->second;
}

void fill_contiguous(CUdeviceptr pointer, std::size_t count, std::size_t itemsize,
                     const void* element, StreamRef stream) {
    if (itemsize != 1 && itemsize != 2 && itemsize != 4 && itemsize != 8 && itemsize != 16)
        throw ArgumentError("cannot fill elements of " + std::to_string(itemsize) +
                            " bytes: 1, 2, 4, 8 or 16 are supported");
    if (count == 0) return;
    current_context();
    const auto* bytes = static_cast<const unsigned char*>(element);
    const bool uniform =
        std::all_of(bytes, bytes + itemsize, [&](unsigned char b) { return b == bytes[0]; });
    if (uniform) {
        KILN_CU(cuMemsetD8Async(pointer, bytes[0], count * itemsize, stream.get()));
        return;
    }
    if (itemsize == 2) {
        check_alignment(pointer, 2);
        KILN_CU(cuMemsetD16Async(pointer, load_as<std::uint16_t>(bytes), count, stream.get()));
        return;
    }
    // Patterns of 4, 8 or 16 bytes: one 32-bit word repeated is a cuMemsetD32.
    const auto word = load_as<std::uint32_t>(bytes);
    bool repeated_word = true;
    for (std::size_t i = 4; i < itemsize; i += 4)
        repeated_word = repeated_word && load_as<std::uint32_t>(bytes + i) == word;
    if (repeated_word) {
        check_alignment(pointer, 4);
        KILN_CU(cuMemsetD32Async(pointer, word, count * (itemsize / 4), stream.get()));
        return;
    }
    check_alignment(pointer, 8);
    const auto even = load_as<std::uint64_t>(bytes);
    const auto odd = itemsize == 16 ? load_as<std::uint64_t>(bytes + 8) : even;
    const unsigned long long words = count * (itemsize / 8);
    internal_function("kiln_fill_pattern64")
        .launch(
            LaunchConfig{grid_for(words), Dim3(kBlock), 0, stream},
            // NOLINTNEXTLINE(performance-no-int-to-ptr): a device address, as the kernel's pointer
            reinterpret_cast<unsigned long long*>(pointer), static_cast<unsigned long long>(even),
            static_cast<unsigned long long>(odd), words);
}

void arange_contiguous(CUdeviceptr out, std::size_t count, DType dtype, double start, double step,
                       StreamRef stream) {
    if (count == 0) return;
    const std::string kernel = std::string("kiln_arange_") + name(dtype);
    const unsigned long long n = count;
    internal_function(kernel.c_str())
        .launch(
            LaunchConfig{grid_for(count), Dim3(kBlock), 0, stream},
            // NOLINTNEXTLINE(performance-no-int-to-ptr): a device address, as the kernel's pointer
            reinterpret_cast<void*>(out), start, step, n);
}

} // namespace kiln::detail
