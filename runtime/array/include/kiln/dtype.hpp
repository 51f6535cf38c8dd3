#pragma once
/// @file
/// Element types of kiln::Array, with NumPy's names: the DType enumeration, its properties
/// (itemsize(), name(), the CUDA type generated code uses), NumPy's type promotion, the host
/// 16-bit float types and conversions, and cast_scalar(), which converts a host value to any dtype
/// the way the GPU does.

#include <complex>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace kiln {

/// The float16 (IEEE 754 binary16) storage type (host side only stores the bits).
struct float16 { // NOLINT(readability-identifier-naming): NumPy's dtype name
    /// The IEEE 754 binary16 bits, as `__half` holds them; to_float16() and to_double() convert.
    std::uint16_t bits;
};
/// The bfloat16 storage type (host side only stores the bits).
struct bfloat16 { // NOLINT(readability-identifier-naming): as float16, ml_dtypes' name
    /// The bfloat16 bits (the top half of a float32), as `__nv_bfloat16` holds them;
    /// to_bfloat16() and to_double() convert.
    std::uint16_t bits;
};

/// An array's element type, named as in NumPy (`bool_` for NumPy's `bool`), plus bfloat16.
/// dtype_of() maps C++ types to it, parse_dtype() names to it.
enum class DType : std::uint8_t {
    bool_,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    complex128,
};

/// Number of dtypes, for tables indexed by DType.
inline constexpr int kDTypeCount = 15;

/// Bytes per element.
/// @param dtype the dtype.
/// @return its size: 1 for bool_, 16 for complex128.
std::size_t itemsize(DType dtype) noexcept;
/// NumPy's name: "bool", "int32", "float16", "bfloat16", "complex64", ...
/// @param dtype the dtype.
/// @return the name, a static string.
const char* name(DType dtype) noexcept;
/// The CUDA C++ type generated code uses: "bool", "int", "float", "__half", "__nv_bfloat16",
/// "kiln::complex<float>", ...
/// @param dtype the dtype.
/// @return the type's spelling, a static string.
const char* cuda_type(DType dtype) noexcept;
/// DType from a NumPy name or common alias ("float32", "float", "double", "int", "uint8",
/// "half", "bool", "complex128", ...).
/// @param text the name.
/// @return the dtype.
/// @throws ArgumentError naming the accepted names.
DType parse_dtype(std::string_view text);

/// Whether a dtype is bool_.
/// @param d the dtype.
/// @return true when it is.
bool is_bool(DType d) noexcept;
/// Whether a dtype is int8, int16, int32 or int64.
/// @param d the dtype.
/// @return true when it is.
bool is_signed_integer(DType d) noexcept;
/// Whether a dtype is uint8, uint16, uint32 or uint64.
/// @param d the dtype.
/// @return true when it is.
bool is_unsigned_integer(DType d) noexcept;
/// Whether a dtype is a signed or unsigned integer (not bool_).
/// @param d the dtype.
/// @return true when it is.
bool is_integer(DType d) noexcept;
/// Whether @p d is a real floating type.
/// @param d the dtype.
/// @return true for:
bool is_floating(DType d) noexcept; ///< float16, bfloat16, float32, float64
/// Whether a dtype is complex64 or complex128.
/// @param d the dtype.
/// @return true when it is.
bool is_complex(DType d) noexcept;

/// NumPy's promotion of two dtypes (`np.result_type` for arrays): int32 + float32 -> float64,
/// int64 + uint64 -> float64, and so on.
/// @param a a dtype.
/// @param b another dtype.
/// @return the smallest dtype both convert to without loss, by NumPy's table.
DType promote_types(DType a, DType b) noexcept;

/// @p value rounded to float16 or bfloat16, to nearest with ties to even (as NumPy and the GPU's
/// `cvt.rn` do): values beyond the largest finite one become infinity, tiny ones subnormals or
/// zero, NaN stays NaN. Bit-exact, no device headers needed.
/// @param value the value.
/// @return the float16 nearest to it.
float16 to_float16(double value) noexcept;
/// @p value rounded to bfloat16, as to_float16() rounds to float16.
/// @param value the value.
/// @return the bfloat16 nearest to it.
bfloat16 to_bfloat16(double value) noexcept;
/// The exact value of a float16.
/// @param value the float16.
/// @return its value (every float16 is a double exactly).
double to_double(float16 value) noexcept;
/// The exact value of a bfloat16.
/// @param value the bfloat16.
/// @return its value.
double to_double(bfloat16 value) noexcept;

namespace detail {
void cast_scalar_double(double value, DType dtype, void* out) noexcept;
void cast_scalar_int64(std::int64_t value, DType dtype, void* out) noexcept;
void cast_scalar_uint64(std::uint64_t value, DType dtype, void* out) noexcept;
void cast_scalar_complex(std::complex<double> value, DType dtype, void* out) noexcept;
} // namespace detail

/// Write @p value converted to @p dtype into @p out (itemsize(dtype) bytes), as C++ converts,
/// but defined everywhere: integers wrap modulo 2^bits (-1 to uint8 is 255, 2^32 to int32 is 0);
/// floating values truncate toward zero into integers, saturating at the type's limits, NaN
/// giving 0 (as the GPU's cvt does); integers convert to floats with a single rounding (exact for
/// every 64-bit value; float16 and bfloat16 through to_float16 / to_bfloat16); complex to real
/// drops the imaginary part; anything to bool is `!= 0`. Takes integers (bool included), floating
/// values, float16, bfloat16 and std::complex.
/// @code
/// std::uint8_t byte; kiln::cast_scalar(-1, kiln::DType::uint8, &byte); // byte == 255
/// @endcode
/// @tparam T the host type of @p value.
/// @param value the value.
/// @param dtype the dtype to convert it to.
/// @param out itemsize(dtype) bytes of host memory, any alignment.
template <class T> void cast_scalar(T value, DType dtype, void* out) noexcept {
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
        detail::cast_scalar_int64(static_cast<std::int64_t>(value), dtype, out);
    else if constexpr (std::is_integral_v<T>)
        detail::cast_scalar_uint64(static_cast<std::uint64_t>(value), dtype, out);
    else if constexpr (std::is_floating_point_v<T>)
        detail::cast_scalar_double(static_cast<double>(value), dtype, out);
    else if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        detail::cast_scalar_double(to_double(value), dtype, out);
    else
        detail::cast_scalar_complex(std::complex<double>(value), dtype, out);
}

/// The DType of a C++ type: dtype_of<float>() == DType::float32. Defined for bool, the fixed-width
/// integers (and long long, unsigned long long, char), float16, bfloat16, float, double and
/// std::complex of float and double; other types do not compile.
/// @tparam T the C++ type.
/// @return its dtype.
template <class T> constexpr DType dtype_of() noexcept;

#define KILN_DTYPE_OF(T, D)                                                                        \
    template <> constexpr DType dtype_of<T>() noexcept {                                           \
        return DType::D;                                                                           \
    }
KILN_DTYPE_OF(bool, bool_)
KILN_DTYPE_OF(std::int8_t, int8)
KILN_DTYPE_OF(std::int16_t, int16)
KILN_DTYPE_OF(std::int32_t, int32)
KILN_DTYPE_OF(std::int64_t, int64)
KILN_DTYPE_OF(std::uint8_t, uint8)
KILN_DTYPE_OF(std::uint16_t, uint16)
KILN_DTYPE_OF(std::uint32_t, uint32)
KILN_DTYPE_OF(std::uint64_t, uint64)
KILN_DTYPE_OF(float16, float16)
KILN_DTYPE_OF(bfloat16, bfloat16)
KILN_DTYPE_OF(float, float32)
KILN_DTYPE_OF(double, float64)
KILN_DTYPE_OF(std::complex<float>, complex64)
KILN_DTYPE_OF(std::complex<double>, complex128)
// On LP64 Linux, long long and long are distinct types of the same width.
KILN_DTYPE_OF(long long, int64)
KILN_DTYPE_OF(unsigned long long, uint64)
KILN_DTYPE_OF(char, int8)
#undef KILN_DTYPE_OF

} // namespace kiln
