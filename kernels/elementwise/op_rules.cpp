#include "op_rules.hpp"

#include "kiln/error.hpp"

#include <cstring>

namespace kiln::detail {

namespace {

// Device helpers of the expressions; each takes operands already of the compute type.
constexpr const char* kPreamble = R"(
template <class T> __device__ T kiln_ipow(T a, T b) {
    if (b < T(0)) return a == T(1) ? T(1) : T(0);
    T r = 1;
    while (b) { if (b & 1) r *= a; a *= a; b >>= 1; }
    return r;
}
__device__ inline float kiln_pow(float a, float b) { return powf(a, b); }
__device__ inline double kiln_pow(double a, double b) { return ::pow(a, b); }
template <class T> __device__ kiln::complex<T> kiln_pow(kiln::complex<T> a, kiln::complex<T> b) { return kiln::pow(a, b); }
template <class T> __device__ T kiln_pow(T a, T b) { return kiln_ipow(a, b); }
template <class T> __device__ T kiln_abs(T a) { return a < T(0) ? T(-a) : a; }
__device__ inline float kiln_abs(float a) { return fabsf(a); }
__device__ inline double kiln_abs(double a) { return fabs(a); }
template <class T> __device__ T kiln_abs(kiln::complex<T> a) { return kiln::abs(a); }
template <class T> __device__ T kiln_maximum(T a, T b) { return (a != a || a > b) ? a : b; }
template <class T> __device__ T kiln_minimum(T a, T b) { return (a != a || a < b) ? a : b; }
template <class T> __device__ T kiln_clip(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }
// Integers as NumPy divides and shifts them: floor division and remainder with Python's signs,
// 0 for a zero divisor (no trap), x // -1 wrapping, shifts past the width giving 0 (or -1).
// (one-word names: T(0) is a cast only of those)
typedef signed char kiln_schar;
typedef long long kiln_llong;
typedef unsigned char kiln_uchar;
typedef unsigned short kiln_ushort;
typedef unsigned int kiln_uint;
typedef unsigned long long kiln_ullong;
#define KILN_INTEGER_OPS(T, NEG, MINUS_ONE)                                                                   \
    __device__ inline bool kiln_negative_sign(T a) { return NEG; }                                 \
    __device__ inline T kiln_floor_divide(T a, T b) {                                              \
        if (b == T(0)) return T(0);                                                                \
        if (MINUS_ONE) return T(0ull - (unsigned long long)a);                    \
        const T q = T(a / b);                                                                      \
        return (T(a % b) != T(0) && kiln_negative_sign(a) != kiln_negative_sign(b)) ? T(q - 1) : q; \
    }                                                                                              \
    __device__ inline T kiln_remainder(T a, T b) {                                                 \
        if (b == T(0) || (MINUS_ONE)) return T(0);                                \
        const T r = T(a % b);                                                                      \
        return (r != T(0) && kiln_negative_sign(r) != kiln_negative_sign(b)) ? T(r + b) : r;       \
    }                                                                                              \
    __device__ inline T kiln_fmod(T a, T b) {                                                      \
        return (b == T(0) || (MINUS_ONE)) ? T(0) : T(a % b);                      \
    }                                                                                              \
    __device__ inline T kiln_left_shift(T a, T b) {                                                \
        return (unsigned long long)b < sizeof(T) * 8 ? T((unsigned long long)a << b) : T(0);       \
    }                                                                                              \
    __device__ inline T kiln_right_shift(T a, T b) {                                               \
        return (unsigned long long)b < sizeof(T) * 8 ? T(a >> b) : T(kiln_negative_sign(a) ? -1 : 0); \
    }                                                                                              \
    __device__ inline T kiln_invert(T a) { return T(~a); }
KILN_INTEGER_OPS(kiln_schar, a < 0, b == -1)
KILN_INTEGER_OPS(short, a < 0, b == -1)
KILN_INTEGER_OPS(int, a < 0, b == -1)
KILN_INTEGER_OPS(kiln_llong, a < 0, b == -1)
KILN_INTEGER_OPS(kiln_uchar, (void(a), false), false)
KILN_INTEGER_OPS(kiln_ushort, (void(a), false), false)
KILN_INTEGER_OPS(kiln_uint, (void(a), false), false)
KILN_INTEGER_OPS(kiln_ullong, (void(a), false), false)
#undef KILN_INTEGER_OPS
__device__ inline bool kiln_negative_sign(bool) { return false; }
__device__ inline bool kiln_invert(bool a) { return !a; }
// Integers and bool where NumPy's floating functions have integer loops.
template <class T> __device__ T kiln_fmax(T a, T b) { return a < b ? b : a; }
template <class T> __device__ T kiln_fmin(T a, T b) { return b < a ? b : a; }
template <class T> __device__ T kiln_floor(T a) { return a; }
template <class T> __device__ T kiln_ceil(T a) { return a; }
template <class T> __device__ T kiln_trunc(T a) { return a; }
template <class T> __device__ bool kiln_isnan(T) { return false; }
template <class T> __device__ bool kiln_isinf(T) { return false; }
template <class T> __device__ bool kiln_isfinite(T) { return true; }
template <class T> __device__ T kiln_sign(T a) { return kiln_negative_sign(a) ? T(-1) : T(a != T(0)); }
template <class T> __device__ T kiln_reciprocal(T a) { return a == T(0) ? T(0) : T(T(1) / a); }
template <class T> __device__ T kiln_real(T a) { return a; }
template <class T> __device__ T kiln_imag(T) { return T(0); }
template <class T> __device__ T kiln_conj(T a) { return a; }
// float and double (16-bit floats compute in float), as NumPy's loops: floor division and
// remainder by npy_divmod, so their values and signs are NumPy's.
#define KILN_FLOAT_OPS(T, S)                                                                       \
    __device__ inline T kiln_floor_divmod(T a, T b, T& mod) {                                            \
        mod = fmod##S(a, b);                                                                       \
        if (b == T(0)) return a / b;                                                               \
        T div = (a - mod) / b;                                                                     \
        if (mod != T(0)) {                                                                         \
            if ((b < T(0)) != (mod < T(0))) { mod += b; div -= T(1); }                             \
        } else {                                                                                   \
            mod = copysign##S(T(0), b);                                                            \
        }                                                                                          \
        if (div == T(0)) return copysign##S(T(0), a / b);                                          \
        T floordiv = floor##S(div);                                                                \
        if (div - floordiv > T(0.5)) floordiv += T(1);                                             \
        return floordiv;                                                                           \
    }                                                                                              \
    __device__ inline T kiln_floor_divide(T a, T b) { T mod; return b == T(0) ? a / b : kiln_floor_divmod(a, b, mod); } \
    __device__ inline T kiln_remainder(T a, T b) { T mod; if (b == T(0)) return fmod##S(a, b); kiln_floor_divmod(a, b, mod); return mod; } \
    __device__ inline T kiln_fmod(T a, T b) { return fmod##S(a, b); }                              \
    __device__ inline T kiln_fmax(T a, T b) { return fmax##S(a, b); }                              \
    __device__ inline T kiln_fmin(T a, T b) { return fmin##S(a, b); }                              \
    __device__ inline T kiln_arctan2(T a, T b) { return atan2##S(a, b); }                          \
    __device__ inline T kiln_hypot(T a, T b) { return hypot##S(a, b); }                            \
    __device__ inline T kiln_copysign(T a, T b) { return copysign##S(a, b); }                      \
    __device__ inline T kiln_cbrt(T a) { return cbrt##S(a); }                                      \
    __device__ inline T kiln_exp2(T a) { return exp2##S(a); }                                      \
    __device__ inline T kiln_expm1(T a) { return expm1##S(a); }                                    \
    __device__ inline T kiln_log2(T a) { return log2##S(a); }                                      \
    __device__ inline T kiln_log10(T a) { return log10##S(a); }                                    \
    __device__ inline T kiln_log1p(T a) { return log1p##S(a); }                                    \
    __device__ inline T kiln_tan(T a) { return tan##S(a); }                                        \
    __device__ inline T kiln_arcsin(T a) { return asin##S(a); }                                    \
    __device__ inline T kiln_arccos(T a) { return acos##S(a); }                                    \
    __device__ inline T kiln_arctan(T a) { return atan##S(a); }                                    \
    __device__ inline T kiln_sinh(T a) { return sinh##S(a); }                                      \
    __device__ inline T kiln_cosh(T a) { return cosh##S(a); }                                      \
    __device__ inline T kiln_arcsinh(T a) { return asinh##S(a); }                                  \
    __device__ inline T kiln_arccosh(T a) { return acosh##S(a); }                                  \
    __device__ inline T kiln_arctanh(T a) { return atanh##S(a); }                                  \
    __device__ inline T kiln_floor(T a) { return floor##S(a); }                                    \
    __device__ inline T kiln_ceil(T a) { return ceil##S(a); }                                      \
    __device__ inline T kiln_trunc(T a) { return trunc##S(a); }                                    \
    __device__ inline T kiln_rint(T a) { return rint##S(a); }                                      \
    __device__ inline bool kiln_isnan(T a) { return isnan(a); }                                    \
    __device__ inline bool kiln_isinf(T a) { return isinf(a); }                                    \
    __device__ inline bool kiln_isfinite(T a) { return isfinite(a); }                              \
    __device__ inline bool kiln_signbit(T a) { return signbit(a); }                                \
    __device__ inline T kiln_sign(T a) { return a > T(0) ? T(1) : (a < T(0) ? T(-1) : (a == T(0) ? T(0) : a)); } \
    __device__ inline T kiln_reciprocal(T a) { return T(1) / a; }
KILN_FLOAT_OPS(float, f)
KILN_FLOAT_OPS(double, )
#undef KILN_FLOAT_OPS
// Complex values, as NumPy's complex loops compute them.
template <class T> __device__ bool kiln_isnan(kiln::complex<T> z) { return isnan(z.re) || isnan(z.im); }
template <class T> __device__ bool kiln_isinf(kiln::complex<T> z) { return isinf(z.re) || isinf(z.im); }
template <class T> __device__ bool kiln_isfinite(kiln::complex<T> z) { return isfinite(z.re) && isfinite(z.im); }
template <class T> __device__ kiln::complex<T> kiln_sign(kiln::complex<T> z) {
    const T m = kiln::abs(z);
    return m == T(0) ? kiln::complex<T>() : kiln::complex<T>(z.re / m, z.im / m);
}
template <class T> __device__ kiln::complex<T> kiln_reciprocal(kiln::complex<T> z) { return kiln::complex<T>(T(1)) / z; }
template <class T> __device__ kiln::complex<T> kiln_rint(kiln::complex<T> z) { return kiln::complex<T>(kiln_rint(z.re), kiln_rint(z.im)); }
template <class T> __device__ T kiln_real(kiln::complex<T> z) { return z.re; }
template <class T> __device__ T kiln_imag(kiln::complex<T> z) { return z.im; }
template <class T> __device__ kiln::complex<T> kiln_conj(kiln::complex<T> z) { return kiln::conj(z); }
template <class T> __device__ kiln::complex<T> kiln_exp2(kiln::complex<T> z) {
    const T ln2 = T(0.693147180559945309417232121458176568);
    return kiln::exp(kiln::complex<T>(z.re * ln2, z.im * ln2));
}
template <class T> __device__ kiln::complex<T> kiln_expm1(kiln::complex<T> z) {
    const T h = sin(z.im / T(2));
    return kiln::complex<T>(kiln_expm1(z.re) * cos(z.im) - T(2) * h * h, exp(z.re) * sin(z.im));
}
template <class T> __device__ kiln::complex<T> kiln_log2(kiln::complex<T> z) {
    const T ln2 = T(0.693147180559945309417232121458176568);
    const kiln::complex<T> l = kiln::log(z);
    return kiln::complex<T>(l.re / ln2, l.im / ln2);
}
template <class T> __device__ kiln::complex<T> kiln_log10(kiln::complex<T> z) { return kiln::log10(z); }
template <class T> __device__ kiln::complex<T> kiln_log1p(kiln::complex<T> z) {
    return kiln::complex<T>(log(kiln_hypot(z.re + T(1), z.im)), kiln_arctan2(z.im, z.re + T(1)));
}
template <class T> __device__ kiln::complex<T> kiln_tan(kiln::complex<T> z) { return kiln::tan(z); }
template <class T> __device__ kiln::complex<T> kiln_sinh(kiln::complex<T> z) { return kiln::sinh(z); }
template <class T> __device__ kiln::complex<T> kiln_cosh(kiln::complex<T> z) { return kiln::cosh(z); }
template <class T> __device__ kiln::complex<T> kiln_arcsinh(kiln::complex<T> z) {
    return kiln::log(z + kiln::sqrt(z * z + kiln::complex<T>(T(1))));
}
template <class T> __device__ kiln::complex<T> kiln_arccosh(kiln::complex<T> z) {
    const kiln::complex<T> one(T(1));
    return kiln::log(z + kiln::sqrt(z + one) * kiln::sqrt(z - one));
}
template <class T> __device__ kiln::complex<T> kiln_arctanh(kiln::complex<T> z) {
    const kiln::complex<T> one(T(1));
    const kiln::complex<T> d = kiln::log(one + z) - kiln::log(one - z);
    return kiln::complex<T>(d.re / T(2), d.im / T(2));
}
template <class T> __device__ kiln::complex<T> kiln_arcsin(kiln::complex<T> z) {
    const kiln::complex<T> w = kiln_arcsinh(kiln::complex<T>(-z.im, z.re));
    return kiln::complex<T>(w.im, -w.re);
}
template <class T> __device__ kiln::complex<T> kiln_arccos(kiln::complex<T> z) {
    const kiln::complex<T> w = kiln_arcsin(z);
    return kiln::complex<T>(T(1.57079632679489661923132169163975144) - w.re, -w.im);
}
template <class T> __device__ kiln::complex<T> kiln_arctan(kiln::complex<T> z) {
    const kiln::complex<T> w = kiln_arctanh(kiln::complex<T>(-z.im, z.re));
    return kiln::complex<T>(w.im, -w.re);
}
)";

// How an operation's dtypes follow from its operands' (NumPy 2's type resolution per ufunc).
enum class TypeRule : std::uint8_t {
    arithmetic,      // the promoted type
    subtract,        // the promoted type; bool refused
    true_divide,     // integers give float64
    ordered,         // maximum, minimum, fmax, fmin: complex refused
    comparison,      // bool
    bitwise,         // bool and integers
    integer_bool8,   // shifts: integers, bool as int8
    division,        // floor_divide, remainder, fmod: bool as int8, complex refused
    floating_binary, // arctan2, hypot, copysign: a floating result, complex refused
    logical,         // bool of the operands' truth
    floating,        // math functions: a floating result
    floating_real,   // cbrt: a floating result, complex refused
    absolute,        // abs: complex gives its real type
    negative,        // bool refused
    same_bool8,      // sign, square, reciprocal: the operand's type, bool as int8
    invert,          // bool and integers
    rounding,        // floor, ceil, trunc: integers kept, complex refused
    classify,        // isnan, isinf, isfinite: bool
    signbit,         // bool, computed in a floating type; complex refused
    real_part,       // real, imag: the real type
    same,            // conj
    where,
    clip,
    convert,
};

// One row per operation: the table the ready operations and fusion both read. The expression
// names its operands $0, $1, $2; `sign` is the C++ operator of the operation, where it has one.
struct OpInfo {
    ElementwiseOp op;
    const char* name;
    int arity;
    TypeRule rule;
    const char* expression;
    const char* sign;
};

constexpr OpInfo kOps[] = {
    {ElementwiseOp::add, "add", 2, TypeRule::arithmetic, "($0 + $1)", "+"},
    {ElementwiseOp::subtract, "subtract", 2, TypeRule::subtract, "($0 - $1)", "-"},
    {ElementwiseOp::multiply, "multiply", 2, TypeRule::arithmetic, "($0 * $1)", "*"},
    {ElementwiseOp::divide, "divide", 2, TypeRule::true_divide, "($0 / $1)", "/"},
    {ElementwiseOp::power, "power", 2, TypeRule::arithmetic, "kiln_pow($0, $1)", nullptr},
    {ElementwiseOp::maximum, "maximum", 2, TypeRule::ordered, "kiln_maximum($0, $1)", nullptr},
    {ElementwiseOp::minimum, "minimum", 2, TypeRule::ordered, "kiln_minimum($0, $1)", nullptr},
    {ElementwiseOp::equal, "equal", 2, TypeRule::comparison, "($0 == $1)", "=="},
    {ElementwiseOp::not_equal, "not_equal", 2, TypeRule::comparison, "($0 != $1)", "!="},
    {ElementwiseOp::less, "less", 2, TypeRule::comparison, "($0 < $1)", "<"},
    {ElementwiseOp::less_equal, "less_equal", 2, TypeRule::comparison, "($0 <= $1)", "<="},
    {ElementwiseOp::greater, "greater", 2, TypeRule::comparison, "($0 > $1)", ">"},
    {ElementwiseOp::greater_equal, "greater_equal", 2, TypeRule::comparison, "($0 >= $1)", ">="},
    {ElementwiseOp::floor_divide, "floor_divide", 2, TypeRule::division,
     "kiln_floor_divide($0, $1)", "//"},
    {ElementwiseOp::remainder, "remainder", 2, TypeRule::division, "kiln_remainder($0, $1)", "%"},
    {ElementwiseOp::fmod, "fmod", 2, TypeRule::division, "kiln_fmod($0, $1)", nullptr},
    {ElementwiseOp::bitwise_and, "bitwise_and", 2, TypeRule::bitwise, "($0 & $1)", "&"},
    {ElementwiseOp::bitwise_or, "bitwise_or", 2, TypeRule::bitwise, "($0 | $1)", "|"},
    {ElementwiseOp::bitwise_xor, "bitwise_xor", 2, TypeRule::bitwise, "($0 ^ $1)", "^"},
    {ElementwiseOp::left_shift, "left_shift", 2, TypeRule::integer_bool8, "kiln_left_shift($0, $1)",
     "<<"},
    {ElementwiseOp::right_shift, "right_shift", 2, TypeRule::integer_bool8,
     "kiln_right_shift($0, $1)", ">>"},
    {ElementwiseOp::logical_and, "logical_and", 2, TypeRule::logical, "($0 && $1)", nullptr},
    {ElementwiseOp::logical_or, "logical_or", 2, TypeRule::logical, "($0 || $1)", nullptr},
    {ElementwiseOp::logical_xor, "logical_xor", 2, TypeRule::logical, "($0 != $1)", nullptr},
    {ElementwiseOp::fmax, "fmax", 2, TypeRule::ordered, "kiln_fmax($0, $1)", nullptr},
    {ElementwiseOp::fmin, "fmin", 2, TypeRule::ordered, "kiln_fmin($0, $1)", nullptr},
    {ElementwiseOp::arctan2, "arctan2", 2, TypeRule::floating_binary, "kiln_arctan2($0, $1)",
     nullptr},
    {ElementwiseOp::hypot, "hypot", 2, TypeRule::floating_binary, "kiln_hypot($0, $1)", nullptr},
    {ElementwiseOp::copysign, "copysign", 2, TypeRule::floating_binary, "kiln_copysign($0, $1)",
     nullptr},
    {ElementwiseOp::exp, "exp", 1, TypeRule::floating, "exp($0)", nullptr},
    {ElementwiseOp::log, "log", 1, TypeRule::floating, "log($0)", nullptr},
    {ElementwiseOp::sqrt, "sqrt", 1, TypeRule::floating, "sqrt($0)", nullptr},
    {ElementwiseOp::sin, "sin", 1, TypeRule::floating, "sin($0)", nullptr},
    {ElementwiseOp::cos, "cos", 1, TypeRule::floating, "cos($0)", nullptr},
    {ElementwiseOp::tanh, "tanh", 1, TypeRule::floating, "tanh($0)", nullptr},
    {ElementwiseOp::abs, "abs", 1, TypeRule::absolute, "kiln_abs($0)", nullptr},
    {ElementwiseOp::negative, "negative", 1, TypeRule::negative, "(-$0)", "-"},
    {ElementwiseOp::invert, "invert", 1, TypeRule::invert, "kiln_invert($0)", "~"},
    {ElementwiseOp::logical_not, "logical_not", 1, TypeRule::logical, "(!$0)", "!"},
    {ElementwiseOp::sign, "sign", 1, TypeRule::same_bool8, "kiln_sign($0)", nullptr},
    {ElementwiseOp::square, "square", 1, TypeRule::same_bool8, "($0 * $0)", nullptr},
    {ElementwiseOp::reciprocal, "reciprocal", 1, TypeRule::same_bool8, "kiln_reciprocal($0)",
     nullptr},
    {ElementwiseOp::cbrt, "cbrt", 1, TypeRule::floating_real, "kiln_cbrt($0)", nullptr},
    {ElementwiseOp::exp2, "exp2", 1, TypeRule::floating, "kiln_exp2($0)", nullptr},
    {ElementwiseOp::expm1, "expm1", 1, TypeRule::floating, "kiln_expm1($0)", nullptr},
    {ElementwiseOp::log2, "log2", 1, TypeRule::floating, "kiln_log2($0)", nullptr},
    {ElementwiseOp::log10, "log10", 1, TypeRule::floating, "kiln_log10($0)", nullptr},
    {ElementwiseOp::log1p, "log1p", 1, TypeRule::floating, "kiln_log1p($0)", nullptr},
    {ElementwiseOp::tan, "tan", 1, TypeRule::floating, "kiln_tan($0)", nullptr},
    {ElementwiseOp::arcsin, "arcsin", 1, TypeRule::floating, "kiln_arcsin($0)", nullptr},
    {ElementwiseOp::arccos, "arccos", 1, TypeRule::floating, "kiln_arccos($0)", nullptr},
    {ElementwiseOp::arctan, "arctan", 1, TypeRule::floating, "kiln_arctan($0)", nullptr},
    {ElementwiseOp::sinh, "sinh", 1, TypeRule::floating, "kiln_sinh($0)", nullptr},
    {ElementwiseOp::cosh, "cosh", 1, TypeRule::floating, "kiln_cosh($0)", nullptr},
    {ElementwiseOp::arcsinh, "arcsinh", 1, TypeRule::floating, "kiln_arcsinh($0)", nullptr},
    {ElementwiseOp::arccosh, "arccosh", 1, TypeRule::floating, "kiln_arccosh($0)", nullptr},
    {ElementwiseOp::arctanh, "arctanh", 1, TypeRule::floating, "kiln_arctanh($0)", nullptr},
    {ElementwiseOp::floor, "floor", 1, TypeRule::rounding, "kiln_floor($0)", nullptr},
    {ElementwiseOp::ceil, "ceil", 1, TypeRule::rounding, "kiln_ceil($0)", nullptr},
    {ElementwiseOp::trunc, "trunc", 1, TypeRule::rounding, "kiln_trunc($0)", nullptr},
    {ElementwiseOp::rint, "rint", 1, TypeRule::floating, "kiln_rint($0)", nullptr},
    {ElementwiseOp::isnan, "isnan", 1, TypeRule::classify, "kiln_isnan($0)", nullptr},
    {ElementwiseOp::isinf, "isinf", 1, TypeRule::classify, "kiln_isinf($0)", nullptr},
    {ElementwiseOp::isfinite, "isfinite", 1, TypeRule::classify, "kiln_isfinite($0)", nullptr},
    {ElementwiseOp::signbit, "signbit", 1, TypeRule::signbit, "kiln_signbit($0)", nullptr},
    {ElementwiseOp::real, "real", 1, TypeRule::real_part, "kiln_real($0)", nullptr},
    {ElementwiseOp::imag, "imag", 1, TypeRule::real_part, "kiln_imag($0)", nullptr},
    {ElementwiseOp::conj, "conj", 1, TypeRule::same, "kiln_conj($0)", nullptr},
    {ElementwiseOp::where, "where", 3, TypeRule::where, "($0 ? $1 : $2)", nullptr},
    {ElementwiseOp::clip, "clip", 3, TypeRule::clip, "kiln_clip($0, $1, $2)", nullptr},
    {ElementwiseOp::convert, "astype", 1, TypeRule::convert, "$0", nullptr},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) ==
                  static_cast<std::size_t>(ElementwiseOp::convert) + 1,
              "a row per operation");

constexpr bool rows_in_order() {
    for (std::size_t k = 0; k < sizeof(kOps) / sizeof(kOps[0]); ++k)
        if (static_cast<std::size_t>(kOps[k].op) != k) return false;
    return true;
}
static_assert(rows_in_order(), "the table's rows follow ElementwiseOp's order");

const OpInfo& info(ElementwiseOp op) {
    return kOps[static_cast<std::size_t>(op)];
}

int kind(DType d) { // NumPy's kinds, ordered: bool < integer < floating < complex
    if (is_bool(d)) return 0;
    if (is_integer(d)) return 1;
    if (is_floating(d)) return 2;
    return 3;
}

// A weak scalar takes the array's type unless its kind is higher (NumPy 2).
DType with_weak_scalar(DType array, DType scalar) {
    if (kind(scalar) <= kind(array)) return array;
    switch (kind(scalar)) {
    case 1:
        return DType::int64;
    case 2:
        return DType::float64;
    default:
        return array == DType::float64 ? DType::complex128
               : kind(array) == 2      ? DType::complex64
                                       : DType::complex128;
    }
}

DType result_type(TypedOperand a, TypedOperand b) {
    if (a.weak == b.weak) return promote_types(a.dtype, b.dtype);
    return a.weak ? with_weak_scalar(b.dtype, a.dtype) : with_weak_scalar(a.dtype, b.dtype);
}

// NumPy's floating result for math functions of integers.
DType floating_result(DType d) {
    if (kind(d) >= 2) return d;
    const std::size_t size = itemsize(d);
    return size == 1 ? DType::float16 : size == 2 ? DType::float32 : DType::float64;
}

// 16-bit floats compute in float: CUDA's math functions have no __half overloads.
DType compute_type(DType d) {
    return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d;
}

// NumPy has no bool loop for these: bool operands are cast to int8, the smallest integer.
DType bool_as_int8(DType d) {
    return is_bool(d) ? DType::int8 : d;
}

std::string label(const char* what, ElementwiseOp op) {
    return what ? std::string(what) : std::string(op_name(op));
}

[[noreturn]] void unordered(const char* what) {
    throw DTypeError(std::string(what) + ": complex numbers have no order");
}

[[noreturn]] void refuse(const std::string& what, const std::string& types, const char* why) {
    throw DTypeError(what + ": not supported for " + types + " (NumPy raises TypeError: " + why +
                     ")");
}

std::string pair_text(TypedOperand a, TypedOperand b) {
    return std::string(name(a.dtype)) + " and " + name(b.dtype);
}

} // namespace

const char* op_name(ElementwiseOp op) {
    return info(op).name;
}

bool op_named(const char* name, ElementwiseOp* op) {
    for (const OpInfo& row : kOps)
        if (std::strcmp(row.name, name) == 0) {
            *op = row.op;
            return true;
        }
    if (std::strcmp(name, "bitwise_not") == 0) {
        *op = ElementwiseOp::invert;
        return true;
    }
    return false;
}

const char* op_sign(ElementwiseOp op) {
    return info(op).sign;
}

bool is_binary(ElementwiseOp op) {
    return info(op).arity == 2;
}

bool is_unary(ElementwiseOp op) {
    return info(op).arity == 1 && op != ElementwiseOp::convert;
}

DType real_dtype(DType d) {
    return d == DType::complex64 ? DType::float32 : d == DType::complex128 ? DType::float64 : d;
}

OpTypes binary_types(ElementwiseOp op, TypedOperand a, TypedOperand b, const char* what) {
    const DType promoted = result_type(a, b);
    switch (info(op).rule) {
    case TypeRule::subtract:
        if (is_bool(promoted))
            refuse(what, pair_text(a, b),
                   "the boolean subtract, `-`, is not supported; use bitwise_xor or logical_xor");
        return {promoted, compute_type(promoted)};
    case TypeRule::true_divide: {
        const DType result = kind(promoted) < 2 ? DType::float64 : promoted; // NumPy's `/`
        return {result, compute_type(result)};
    }
    case TypeRule::ordered:
        if (is_complex(promoted)) unordered(what);
        return {promoted, compute_type(promoted)};
    case TypeRule::comparison: {
        const bool order = op != ElementwiseOp::equal && op != ElementwiseOp::not_equal;
        if (order && is_complex(promoted)) unordered(what);
        return {DType::bool_, compute_type(promoted)};
    }
    case TypeRule::bitwise:
    case TypeRule::integer_bool8:
        if (kind(promoted) >= 2)
            refuse(what, pair_text(a, b), "only integer and boolean operands have bits to combine");
        if (info(op).rule == TypeRule::integer_bool8)
            return {bool_as_int8(promoted), bool_as_int8(promoted)};
        return {promoted, promoted};
    case TypeRule::division: {
        if (is_complex(promoted))
            refuse(what, pair_text(a, b), "complex numbers have no floor division or remainder");
        const DType result = bool_as_int8(promoted);
        return {result, compute_type(result)};
    }
    case TypeRule::floating_binary: {
        if (is_complex(promoted)) refuse(what, pair_text(a, b), "defined for real values only");
        const DType result = floating_result(promoted);
        return {result, compute_type(result)};
    }
    case TypeRule::logical:
        return {DType::bool_, DType::bool_};
    default:
        return {promoted, compute_type(promoted)};
    }
}

OpTypes exact_comparison_types(ElementwiseOp op, OpTypes types, const Scalar& scalar) {
    const bool comparison = info(op).rule == TypeRule::comparison;
    if (!comparison || !scalar.is_weak() || !is_integer(scalar.dtype()) ||
        !is_integer(types.compute) || scalar.fits(types.compute))
        return types;
    // A weak integer is an int64 at most; an unsigned one past int64's range would be strong.
    return {types.result, types.compute == DType::uint64 ? DType::float64 : DType::int64};
}

OpTypes unary_types(ElementwiseOp op, DType a, const char* what) {
    const std::string who = label(what, op);
    switch (info(op).rule) {
    case TypeRule::absolute: {
        const DType compute = compute_type(a);
        return {real_dtype(a), is_bool(compute) ? DType::uint8 : compute};
    }
    case TypeRule::floating_real:
        if (is_complex(a)) refuse(who, name(a), "defined for real values only");
        [[fallthrough]];
    case TypeRule::floating: {
        const DType result = floating_result(a);
        return {result, compute_type(result)};
    }
    case TypeRule::negative:
        if (is_bool(a))
            refuse(who, name(a),
                   "the boolean negative, `-`, is not supported; use invert, `~`, or logical_not");
        return {a, compute_type(a)};
    case TypeRule::same_bool8: {
        const DType result = bool_as_int8(a);
        return {result, compute_type(result)};
    }
    case TypeRule::invert:
        if (kind(a) >= 2)
            refuse(who, name(a), "only integer and boolean values have bits to invert");
        return {a, a};
    case TypeRule::rounding:
        if (is_complex(a)) refuse(who, name(a), "complex numbers have no order to round in");
        return {a, compute_type(a)};
    case TypeRule::classify:
        return {DType::bool_, compute_type(a)};
    case TypeRule::signbit:
        if (is_complex(a)) refuse(who, name(a), "complex numbers have no sign bit");
        return {DType::bool_, compute_type(floating_result(a))};
    case TypeRule::logical:
        return {DType::bool_, DType::bool_};
    case TypeRule::real_part:
        return {real_dtype(a), compute_type(a)};
    default:
        return {a, compute_type(a)};
    }
}

OpTypes where_types(TypedOperand x, TypedOperand y) {
    const DType result = result_type(x, y);
    return {result, compute_type(result)};
}

OpTypes clip_types(DType a) {
    if (is_complex(a)) unordered("clip");
    return {a, compute_type(a)};
}

OpTypes convert_types(DType target) {
    return {target, target};
}

OperandRole operand_role(ElementwiseOp op, int k) {
    if (op == ElementwiseOp::where) return k == 0 ? OperandRole::condition : OperandRole::result;
    if (op == ElementwiseOp::convert) return OperandRole::result;
    if (info(op).rule == TypeRule::logical) return OperandRole::condition;
    return OperandRole::compute;
}

DType operand_type(ElementwiseOp op, int k, const OpTypes& types) {
    switch (operand_role(op, k)) {
    case OperandRole::condition:
        return DType::bool_;
    case OperandRole::result:
        return types.result;
    default:
        return types.compute;
    }
}

std::string op_expression(ElementwiseOp op, const std::string& x, const std::string& y,
                          const std::string& z) {
    const std::string* operands[] = {&x, &y, &z};
    std::string out;
    for (const char* c = info(op).expression; *c; ++c) {
        if (c[0] == '$' && c[1] >= '0' && c[1] <= '2') {
            out += *operands[c[1] - '0'];
            ++c;
        } else {
            out += *c;
        }
    }
    return out;
}

const char* ops_preamble() {
    return kPreamble;
}

bool op_uses_helpers(ElementwiseOp op) {
    return op_expression(op, "x", "y", "z").find("kiln_") == 0;
}

} // namespace kiln::detail
