#include "kiln/ops.hpp"

#include "kiln/error.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace kiln {

namespace {

enum class Op {
    add,
    subtract,
    multiply,
    divide,
    power,
    maximum,
    minimum,
    equal,
    not_equal,
    less,
    less_equal,
    greater,
    greater_equal,
    exp,
    log,
    sqrt,
    sin,
    cos,
    tanh,
    abs,
    where,
    clip,
    convert,
};

// Device helpers the ready ops share; `P` is the type the operation computes in.
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
)";

const char* binary_operation(Op op) {
    switch (op) {
    case Op::add:
        return "z = kiln::cast<V>(kiln::cast<P>(x) + kiln::cast<P>(y))";
    case Op::subtract:
        return "z = kiln::cast<V>(kiln::cast<P>(x) - kiln::cast<P>(y))";
    case Op::multiply:
        return "z = kiln::cast<V>(kiln::cast<P>(x) * kiln::cast<P>(y))";
    case Op::divide:
        return "z = kiln::cast<V>(kiln::cast<P>(x) / kiln::cast<P>(y))";
    case Op::power:
        return "z = kiln::cast<V>(kiln_pow(kiln::cast<P>(x), kiln::cast<P>(y)))";
    case Op::maximum:
        return "const P a = kiln::cast<P>(x); const P b = kiln::cast<P>(y); "
               "z = kiln::cast<V>((a != a || a > b) ? a : b)";
    case Op::minimum:
        return "const P a = kiln::cast<P>(x); const P b = kiln::cast<P>(y); "
               "z = kiln::cast<V>((a != a || a < b) ? a : b)";
    case Op::equal:
        return "z = kiln::cast<V>(kiln::cast<P>(x) == kiln::cast<P>(y))";
    case Op::not_equal:
        return "z = kiln::cast<V>(kiln::cast<P>(x) != kiln::cast<P>(y))";
    case Op::less:
        return "z = kiln::cast<V>(kiln::cast<P>(x) < kiln::cast<P>(y))";
    case Op::less_equal:
        return "z = kiln::cast<V>(kiln::cast<P>(x) <= kiln::cast<P>(y))";
    case Op::greater:
        return "z = kiln::cast<V>(kiln::cast<P>(x) > kiln::cast<P>(y))";
    case Op::greater_equal:
        return "z = kiln::cast<V>(kiln::cast<P>(x) >= kiln::cast<P>(y))";
    default:
        return "";
    }
}

const char* unary_operation(Op op) {
    switch (op) {
    case Op::exp:
        return "z = kiln::cast<V>(exp(kiln::cast<P>(x)))";
    case Op::log:
        return "z = kiln::cast<V>(log(kiln::cast<P>(x)))";
    case Op::sqrt:
        return "z = kiln::cast<V>(sqrt(kiln::cast<P>(x)))";
    case Op::sin:
        return "z = kiln::cast<V>(sin(kiln::cast<P>(x)))";
    case Op::cos:
        return "z = kiln::cast<V>(cos(kiln::cast<P>(x)))";
    case Op::tanh:
        return "z = kiln::cast<V>(tanh(kiln::cast<P>(x)))";
    case Op::abs:
        return "z = kiln::cast<V>(kiln_abs(kiln::cast<P>(x)))";
    case Op::convert:
        return "z = kiln::cast<V>(x)";
    default:
        return "";
    }
}

// 16-bit floats compute in float: CUDA's math functions have no __half overloads.
DType compute_type(DType d) {
    return d == DType::float16 || d == DType::bfloat16 ? DType::float32 : d;
}

// One ElementwiseKernel per (operation, compute type), built on first use and kept; each caches
// its own specializations per dtypes and layout.
const ElementwiseKernel& kernel_for(Op op, DType compute) {
    static std::mutex mutex;
    static std::map<std::pair<Op, DType>, std::unique_ptr<ElementwiseKernel>> kernels;
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = kernels[{op, compute}];
    if (!slot) {
        ElementwiseOptions options;
        options.preamble = std::string("typedef ") + cuda_type(compute) + " P;\n" + kPreamble;
        switch (op) {
        case Op::where:
            slot = std::make_unique<ElementwiseKernel>(
                "C c, T x, U y", "V z",
                "z = kiln::cast<bool>(c) ? kiln::cast<V>(x) : kiln::cast<V>(y)", "kiln_where",
                options);
            break;
        case Op::clip:
            slot = std::make_unique<ElementwiseKernel>(
                "T x, U lo, W hi", "V z",
                "const P v = kiln::cast<P>(x); const P l = kiln::cast<P>(lo); "
                "const P h = kiln::cast<P>(hi); z = kiln::cast<V>(v < l ? l : (v > h ? h : v))",
                "kiln_clip", options);
            break;
        default: {
            const char* binary = binary_operation(op);
            if (*binary)
                slot = std::make_unique<ElementwiseKernel>("T x, U y", "V z", binary, "kiln_binary",
                                                           options);
            else
                slot = std::make_unique<ElementwiseKernel>("T x", "V z", unary_operation(op),
                                                           "kiln_unary", options);
        }
        }
    }
    return *slot;
}

int kind(DType d) { // NumPy's kinds, ordered: bool < integer < floating < complex
    if (is_bool(d)) return 0;
    if (is_integer(d)) return 1;
    if (is_floating(d)) return 2;
    return 3;
}

// A C++ scalar is weak: it takes the array's type unless its kind is higher (NumPy 2).
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

DType result_type(const Arg& a, const Arg& b, const char* what) {
    if (a.is_array() && b.is_array()) return promote_types(a.array().dtype(), b.array().dtype());
    if (a.is_array()) return with_weak_scalar(a.array().dtype(), b.scalar().dtype());
    if (b.is_array()) return with_weak_scalar(b.array().dtype(), a.scalar().dtype());
    throw ArgumentError(std::string(what) + ": at least one argument must be an array");
}

// NumPy's floating result for math functions of integers.
DType floating_result(DType d) {
    if (kind(d) >= 2) return d;
    const std::size_t size = itemsize(d);
    return size == 1 ? DType::float16 : size == 2 ? DType::float32 : DType::float64;
}

Array run(const ElementwiseKernel& kernel, std::initializer_list<Arg> inputs, DType result,
          const OpOptions& options) {
    CallOptions call;
    call.stream = options.stream;
    // The output is allocated here so that its placeholder V is bound to the result dtype.
    Array out;
    if (options.out) {
        out = *options.out;
    } else {
        Dims shape;
        bool first = true;
        for (const Arg& arg : inputs)
            if (arg.is_array()) {
                shape =
                    first ? arg.array().shape() : broadcast_shapes({shape, arg.array().shape()});
                first = false;
            }
        out = empty(shape, result, options.stream);
    }
    std::array<Arg, 4> args{Arg(0), Arg(0), Arg(0), Arg(0)};
    std::size_t n = 0;
    for (const Arg& arg : inputs)
        args[n++] = arg;
    args[n++] = Arg(out);
    kernel.call(args.data(), n, call);
    return out;
}

Array binary(Op op, const Arg& a, const Arg& b, const OpOptions& options, const char* what) {
    DType result = result_type(a, b, what);
    DType compute = result;
    const bool comparison = op >= Op::equal && op <= Op::greater_equal;
    if (op == Op::divide && kind(result) < 2) compute = result = DType::float64; // NumPy's `/`
    if (comparison) {
        if (is_complex(compute) && op != Op::equal && op != Op::not_equal)
            throw ArgumentError(std::string(what) + ": complex numbers have no order");
        result = DType::bool_;
    }
    if ((op == Op::maximum || op == Op::minimum) && is_complex(compute))
        throw ArgumentError(std::string(what) + ": complex numbers have no order");
    return run(kernel_for(op, compute_type(compute)), {a, b}, result, options);
}

Array unary(Op op, const Array& a, const OpOptions& options) {
    DType result = floating_result(a.dtype());
    if (op == Op::abs) {
        result = a.dtype() == DType::complex64    ? DType::float32
                 : a.dtype() == DType::complex128 ? DType::float64
                                                  : a.dtype();
        DType compute = compute_type(a.dtype());
        if (is_bool(compute)) compute = DType::uint8;
        return run(kernel_for(op, compute), {a}, result, options);
    }
    return run(kernel_for(op, compute_type(result)), {a}, result, options);
}

} // namespace

Array add(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::add, a, b, o, "add");
}
Array subtract(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::subtract, a, b, o, "subtract");
}
Array multiply(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::multiply, a, b, o, "multiply");
}
Array divide(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::divide, a, b, o, "divide");
}
Array power(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::power, a, b, o, "power");
}
Array maximum(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::maximum, a, b, o, "maximum");
}
Array minimum(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::minimum, a, b, o, "minimum");
}
Array equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::equal, a, b, o, "equal");
}
Array not_equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::not_equal, a, b, o, "not_equal");
}
Array less(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::less, a, b, o, "less");
}
Array less_equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::less_equal, a, b, o, "less_equal");
}
Array greater(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::greater, a, b, o, "greater");
}
Array greater_equal(const Arg& a, const Arg& b, const OpOptions& o) {
    return binary(Op::greater_equal, a, b, o, "greater_equal");
}

Array exp(const Array& a, const OpOptions& o) {
    return unary(Op::exp, a, o);
}
Array log(const Array& a, const OpOptions& o) {
    return unary(Op::log, a, o);
}
Array sqrt(const Array& a, const OpOptions& o) {
    return unary(Op::sqrt, a, o);
}
Array sin(const Array& a, const OpOptions& o) {
    return unary(Op::sin, a, o);
}
Array cos(const Array& a, const OpOptions& o) {
    return unary(Op::cos, a, o);
}
Array tanh(const Array& a, const OpOptions& o) {
    return unary(Op::tanh, a, o);
}
Array abs(const Array& a, const OpOptions& o) {
    return unary(Op::abs, a, o);
}

Array where(const Array& condition, const Arg& x, const Arg& y, const OpOptions& o) {
    const DType result = result_type(x, y, "where");
    CallOptions call;
    call.stream = o.stream;
    Array out =
        o.out
            ? *o.out
            : empty(broadcast_shapes({condition.shape(), x.is_array() ? x.array().shape() : Dims{},
                                      y.is_array() ? y.array().shape() : Dims{}}),
                    result, o.stream);
    std::array<Arg, 4> args{Arg(condition), x, y, Arg(out)};
    kernel_for(Op::where, compute_type(result)).call(args.data(), args.size(), call);
    return out;
}

Array clip(const Array& a, const Arg& lo, const Arg& hi, const OpOptions& o) {
    if (is_complex(a.dtype())) throw ArgumentError("clip: complex numbers have no order");
    CallOptions call;
    call.stream = o.stream;
    const DType result = a.dtype();
    Array out = o.out ? *o.out : empty(a.shape(), result, o.stream);
    std::array<Arg, 4> args{Arg(a), lo, hi, Arg(out)};
    kernel_for(Op::clip, compute_type(result)).call(args.data(), args.size(), call);
    return out;
}

Array astype(const Array& a, DType dtype, const OpOptions& o) {
    return run(kernel_for(Op::convert, dtype), {a}, dtype, o);
}

Array ascontiguousarray(const Array& a, const OpOptions& o) {
    return run(kernel_for(Op::convert, a.dtype()), {a}, a.dtype(), o);
}

void fill(const Array& a, const Scalar& value, StreamRef stream) {
    OpOptions o;
    o.stream = stream;
    o.out = &a;
    run(kernel_for(Op::convert, a.dtype()), {Arg(value)}, a.dtype(), o);
}

} // namespace kiln
