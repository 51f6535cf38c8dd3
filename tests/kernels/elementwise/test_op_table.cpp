// The table of NumPy's operations (op_rules.hpp) without a GPU: every operation generates source
// that NVRTC compiles (sm_90) for every dtype it accepts, fused and as a ready operation; the
// dtypes NumPy refuses are DTypeErrors, fused and ready; NumPy 2's result dtypes. Arrays are
// described with Array::wrap over made-up, aligned addresses: nothing is launched.

#include "elementwise/op_rules.hpp"
#include "elementwise/ready_ops.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <future>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

using kiln::Arg;
using kiln::Array;
using kiln::DType;
using kiln::fusion::Var;

namespace {

constexpr DType kAll[] = {DType::bool_,   DType::int8,      DType::int16,     DType::int32,
                          DType::int64,   DType::uint8,     DType::uint16,    DType::uint32,
                          DType::uint64,  DType::float16,   DType::bfloat16,  DType::float32,
                          DType::float64, DType::complex64, DType::complex128};

const char* const kBinary[] = {"floor_divide", "remainder",   "fmod",        "bitwise_and",
                               "bitwise_or",   "bitwise_xor", "left_shift",  "right_shift",
                               "logical_and",  "logical_or",  "logical_xor", "fmax",
                               "fmin",         "arctan2",     "hypot",       "copysign"};
const char* const kUnary[] = {
    "negative", "invert", "logical_not", "sign",     "square",  "reciprocal", "cbrt",   "exp2",
    "expm1",    "log2",   "log10",       "log1p",    "tan",     "arcsin",     "arccos", "arctan",
    "sinh",     "cosh",   "arcsinh",     "arccosh",  "arctanh", "floor",      "ceil",   "trunc",
    "rint",     "isnan",  "isinf",       "isfinite", "signbit", "real",       "imag",   "conj"};

Array fake(DType dtype, const kiln::Dims& shape = {256}) {
    static CUdeviceptr next = CUdeviceptr{1} << 32;
    next += CUdeviceptr{1} << 28; // far apart, 256-byte aligned
    return Array::wrap(next, shape, dtype);
}

bool is_one_of(const std::string& op, std::initializer_list<const char*> names) {
    for (const char* n : names)
        if (op == n) return true;
    return false;
}

bool inexact(DType d) {
    return kiln::is_floating(d) || kiln::is_complex(d);
}

// Whether NumPy has a loop for the operation on these dtypes (its ufuncs' type lists), written
// here apart from Kiln's rules. One difference, documented: fmax and fmin of complex values, which
// NumPy orders and Kiln refuses (as it does for maximum and minimum).
bool accepts(const std::string& op, DType a, DType b) {
    const DType p = kiln::promote_types(a, b);
    if (is_one_of(op, {"bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift"}))
        return !inexact(p);
    if (is_one_of(op, {"floor_divide", "remainder", "fmod", "arctan2", "hypot", "copysign", "fmax",
                       "fmin"}))
        return !kiln::is_complex(p);
    return true;
}

bool accepts(const std::string& op, DType a) {
    if (op == "invert") return !inexact(a);
    if (op == "negative") return !kiln::is_bool(a);
    if (is_one_of(op, {"cbrt", "floor", "ceil", "trunc", "signbit"})) return !kiln::is_complex(a);
    return true;
}

template <class E> std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

} // namespace

// One kernel per first dtype: its array against an array of every dtype, through every binary
// operation, and through every unary one, all summed as complex128 so no line is left out.
TEST(OpTable, EveryFusedOperationCompilesForEveryDtypeItAcceptsAndRefusesTheRest) {
    // Traced here, one dtype after another; compiled on threads (NVRTC spends seconds on each).
    std::vector<std::future<std::string>> compiles;
    for (DType a : kAll) {
        std::set<std::string> accepted, refused;
        auto all_ops = kiln::fuse(std::string("all_ops_") + kiln::name(a), [&](auto... v) {
            const std::vector<Var> in{v...};
            if (in.size() != 16) throw std::logic_error("traced with 16 arguments only");
            Var sum = in[0].astype(DType::complex128);
            auto take = [&](const std::string& what, const std::function<Var()>& make) {
                try {
                    sum = sum + make().astype(DType::complex128);
                    accepted.insert(what);
                } catch (const kiln::DTypeError&) {
                    refused.insert(what);
                }
            };
            for (std::size_t k = 1; k < in.size(); ++k)
                for (const char* op : kBinary)
                    take(std::string(op) + ' ' + kiln::name(in[k].dtype()), [&] {
                        return kiln::detail::fuse_apply(op, {in[0], in[k]});
                    });
            for (const char* op : kUnary)
                take(op, [&] { return kiln::detail::fuse_apply(op, {in[0]}); });
            return sum;
        });
        std::vector<Array> arrays{fake(a)};
        for (DType b : kAll)
            arrays.push_back(fake(b));
        const std::vector<Arg> args(arrays.begin(), arrays.end());
        const std::string src = all_ops.source_for(args.data(), args.size());
        for (DType b : kAll)
            for (const char* op : kBinary) {
                const std::string what = std::string(op) + ' ' + kiln::name(b);
                EXPECT_EQ(accepted.count(what), accepts(op, a, b) ? 1u : 0u)
                    << kiln::name(a) << ' ' << what;
                EXPECT_EQ(refused.count(what), accepts(op, a, b) ? 0u : 1u)
                    << kiln::name(a) << ' ' << what;
            }
        for (const char* op : kUnary)
            EXPECT_EQ(accepted.count(op), accepts(op, a) ? 1u : 0u) << op << ' ' << kiln::name(a);
        for (const std::string& what : accepted)
            if (what.find(' ') == std::string::npos) {
                EXPECT_TRUE(has(src, "// traced: " + what + "(in0)")) << what << ": " << src;
            }
        compiles.push_back(
            std::async(std::launch::async, [a, arrays, f = std::move(all_ops)]() -> std::string {
                const std::vector<Arg> held(arrays.begin(), arrays.end());
                try {
                    if (!f.compile_for(held.data(), held.size(), "sm_90")) return "no program";
                } catch (const kiln::CompileError& e) {
                    return e.what() + ("\n" + e.log());
                }
                return {};
            }));
    }
    for (std::size_t k = 0; k < compiles.size(); ++k) {
        const std::string failure = compiles[k].get();
        EXPECT_TRUE(failure.empty()) << kiln::name(kAll[k]) << ": " << failure;
    }
}

// The ready operations run the table's expressions in kernels of their own, one per operation and
// compute type: each kernel generates source for every dtype the operation accepts; one dtype per
// operation is compiled (the expressions themselves compile above for every dtype).
TEST(OpTable, EveryReadyOperationGeneratesSourceForEveryDtypeAndCompiles) {
    using kiln::detail::ElementwiseOp;
    int compiled = 0;
    for (int k = 0; k < static_cast<int>(ElementwiseOp::convert); ++k) {
        const auto op = static_cast<ElementwiseOp>(k);
        if (op == ElementwiseOp::where || op == ElementwiseOp::clip) continue;
        bool done = false;
        for (DType a : kAll) {
            kiln::detail::OpTypes types{};
            try {
                types = kiln::detail::is_binary(op)
                            ? kiln::detail::binary_types(op, {a, false}, {a, false}, "test")
                            : kiln::detail::unary_types(op, a);
            } catch (const kiln::DTypeError&) {
                continue;
            }
            const kiln::ElementwiseKernel& kernel =
                kiln::detail::ready_op_kernel(op, types.compute);
            Array x = fake(a), out = fake(types.result);
            std::vector<Arg> args{x};
            if (kiln::detail::is_binary(op)) args.emplace_back(x);
            args.emplace_back(out);
            const std::string src = kernel.source_for(args.data(), args.size());
            EXPECT_TRUE(has(src, "z = kiln::cast<V>(")) << kiln::detail::op_name(op) << src;
            if (done || kiln::is_complex(a) || a == DType::bool_) continue;
            done = true;
            ++compiled;
            try {
                EXPECT_TRUE(kernel.compile_for(args.data(), args.size(), {}, "sm_90"));
            } catch (const kiln::CompileError& e) {
                ADD_FAILURE() << kiln::detail::op_name(op) << ": " << e.what() << "\n" << e.log();
            }
        }
    }
    EXPECT_GT(compiled, 60);
    Array i = fake(DType::int32), out = fake(DType::int32);
    std::vector<Arg> args{i, i, out, out};
    EXPECT_TRUE(kiln::detail::ready_divmod_kernel(DType::int32)
                    .compile_for(args.data(), args.size(), {}, "sm_90"));
}

TEST(OpTable, ReadyOperationsRefuseWhatNumPyRefusesBeforeTouchingTheDevice) {
    Array f = fake(DType::float32), c = fake(DType::complex64), b = fake(DType::bool_);
    const std::string message = error_of<kiln::DTypeError>([&] { kiln::bitwise_and(f, f); });
    EXPECT_TRUE(has(message, "bitwise_and")) << message;
    EXPECT_TRUE(has(message, "float32")) << message;
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::left_shift(f, 2); }), "left_shift"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::invert(f); }), "invert"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { (void)(~f); }), "invert"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { (void)(f | 1); }), "bitwise_or"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::floor_divide(c, c); }), "complex64"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { (void)(c % 2); }), "remainder"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::divmod(c, 2); }), "divmod"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::negative(b); }), "boolean negative"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::subtract(b, b); }), "boolean subtract"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::floor(c); }), "floor"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::arctan2(c, f); }), "arctan2"));
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] { kiln::nanmax(c); }), "nanmax"));
    // A DTypeError is an ArgumentError, as the errors of complex orders always were.
    EXPECT_THROW(kiln::maximum(c, c), kiln::ArgumentError);
    // NumPy 2's OverflowError for a weak scalar the operation's type cannot hold.
    Array u8 = fake(DType::uint8);
    EXPECT_THROW(kiln::bitwise_and(u8, -1), kiln::OverflowError);
    EXPECT_THROW(kiln::floor_divide(u8, 300), kiln::OverflowError);
}

TEST(OpTable, FusedOperationsRefuseWhatNumPyRefusesNamingTheFunction) {
    Array f = fake(DType::float32), u8 = fake(DType::uint8), b = fake(DType::bool_);
    auto bits = kiln::fuse("bits", [](auto x, auto y) { return x & y; });
    const std::string message = error_of<kiln::DTypeError>([&] {
        Arg args[] = {f, f};
        bits.source_for(args, 2);
    });
    EXPECT_TRUE(has(message, "kiln::fuse 'bits'")) << message;
    EXPECT_TRUE(has(message, "bitwise_and")) << message;
    auto negate = kiln::fuse("negate", [](auto x) { return -x; });
    EXPECT_TRUE(has(error_of<kiln::DTypeError>([&] {
                        Arg args[] = {b};
                        negate.source_for(args, 1);
                    }),
                    "boolean negative"));
    auto literal = kiln::fuse("literal", [](auto x) { return x & 256; });
    EXPECT_THROW(
        {
            Arg args[] = {u8};
            literal.source_for(args, 1);
        },
        kiln::OverflowError);
}

// NumPy 2's result dtypes (checked against numpy 2.x by hand), fused and ready alike.
TEST(OpTable, ResultDtypesAreNumPy2s) {
    struct Case {
        const char* op;
        DType a, b, result;
    };
    const DType none = DType::bool_;
    const Case cases[] = {
        {"floor_divide", DType::bool_, DType::bool_, DType::int8},
        {"floor_divide", DType::int32, DType::float32, DType::float64},
        {"remainder", DType::uint8, DType::int8, DType::int16},
        {"fmod", DType::uint64, DType::int64, DType::float64},
        {"bitwise_and", DType::bool_, DType::bool_, DType::bool_},
        {"bitwise_xor", DType::uint16, DType::int8, DType::int32},
        {"left_shift", DType::bool_, DType::bool_, DType::int8},
        {"right_shift", DType::uint8, DType::int8, DType::int16},
        {"logical_and", DType::complex64, DType::int8, DType::bool_},
        {"fmax", DType::float16, DType::int8, DType::float16},
        {"arctan2", DType::int16, DType::int16, DType::float32},
        {"hypot", DType::int32, DType::int32, DType::float64},
        {"copysign", DType::int8, DType::float16, DType::float16},
        {"negative", DType::uint8, none, DType::uint8},
        {"invert", DType::bool_, none, DType::bool_},
        {"sign", DType::bool_, none, DType::int8},
        {"square", DType::uint16, none, DType::uint16},
        {"reciprocal", DType::bool_, none, DType::int8},
        {"cbrt", DType::uint8, none, DType::float16},
        {"exp2", DType::int64, none, DType::float64},
        {"log1p", DType::bfloat16, none, DType::bfloat16},
        {"floor", DType::int32, none, DType::int32},
        {"trunc", DType::bool_, none, DType::bool_},
        {"rint", DType::int8, none, DType::float16},
        {"isnan", DType::float16, none, DType::bool_},
        {"signbit", DType::int64, none, DType::bool_},
        {"real", DType::complex64, none, DType::float32},
        {"imag", DType::complex128, none, DType::float64},
        {"imag", DType::float32, none, DType::float32},
        {"conj", DType::complex64, none, DType::complex64},
        {"arcsinh", DType::complex64, none, DType::complex64},
    };
    for (const Case& c : cases) {
        kiln::detail::ElementwiseOp op{};
        ASSERT_TRUE(kiln::detail::op_named(c.op, &op)) << c.op;
        const bool binary = kiln::detail::is_binary(op);
        DType seen = DType::bool_;
        auto f = kiln::fuse(std::string("dtype_of_") + c.op, [&](auto... v) {
            const std::vector<Var> in{v...};
            const Var r = in.size() == 2 ? kiln::detail::fuse_apply(c.op, {in[0], in[1]})
                                         : kiln::detail::fuse_apply(c.op, {in[0]});
            seen = r.dtype();
            return r;
        });
        Array x = fake(c.a), y = fake(c.b);
        std::vector<Arg> args{x};
        if (binary) args.emplace_back(y);
        f.source_for(args.data(), args.size());
        EXPECT_EQ(seen, c.result) << c.op << '(' << kiln::name(c.a) << ", " << kiln::name(c.b)
                                  << ')';
    }
    // Weak C++ scalars take the array's type (NumPy 2): uint8 >> 2 stays uint8, int8 // 2.5 is
    // float64.
    DType shifted = DType::bool_, divided = DType::bool_;
    auto weak = kiln::fuse("weak", [&](auto x) {
        shifted = (x >> 2).dtype();
        divided = kiln::floor_divide(x, 2.5).dtype();
        return x >> 2;
    });
    Array u8 = fake(DType::uint8);
    Arg args[] = {u8};
    weak.source_for(args, 1);
    EXPECT_EQ(shifted, DType::uint8);
    EXPECT_EQ(divided, DType::float64);
}

TEST(OpTable, OperatorsOnVarsTraceAsNumPysOperations) {
    auto f = kiln::fuse("operators", [](auto x, auto y) {
        return std::make_tuple(x & y, x | y, x ^ y, ~x, x << y, x >> y, x % y, -x);
    });
    Array x = fake(DType::int32), y = fake(DType::int32);
    Arg args[] = {x, y};
    const std::string src = f.source_for(args, 2);
    for (const char* traced :
         {"// traced: in0 & in1", "// traced: in0 | in1", "// traced: in0 ^ in1",
          "// traced: invert(in0)", "// traced: in0 << in1", "// traced: in0 >> in1",
          "// traced: in0 % in1", "// traced: negative(in0)"})
        EXPECT_TRUE(has(src, traced)) << traced << ": " << src;
    EXPECT_FALSE(has(src, "* -1")) << "negation is NumPy's negative, not a product: " << src;
    EXPECT_TRUE(f.compile_for(args, 2, "sm_90"));
    auto g = kiln::fuse("logic", [](auto u, auto v) {
        auto [q, r] = kiln::divmod(u, v);
        return std::make_tuple(!u, kiln::logical_xor(u, v), q, r);
    });
    const std::string gsrc = g.source_for(args, 2);
    EXPECT_TRUE(has(gsrc, "// traced: logical_not(in0)")) << gsrc;
    EXPECT_TRUE(has(gsrc, "// traced: in0 // in1")) << gsrc;
    EXPECT_TRUE(g.compile_for(args, 2, "sm_90"));
}

TEST(OpTable, NanReductionsVarAndStdFuseAsOneReductionEach) {
    for (const char* op : {"nansum", "nanprod", "nanmax", "nanmin", "nanmean", "var", "std"})
        for (DType d :
             {DType::float32, DType::float64, DType::int32, DType::float16, DType::complex64}) {
            const bool refused =
                kiln::is_complex(d) && (std::string(op) == "nanmax" || std::string(op) == "nanmin");
            kiln::ReduceOptions options;
            options.ddof = 1;
            auto f = kiln::fuse(std::string("fused_") + op, [&](auto x) {
                return kiln::sqrt(kiln::detail::fuse_reduce(op, x * 2, -1, options));
            });
            Array x = fake(d, {64, 1000});
            Arg args[] = {x};
            if (refused) {
                EXPECT_THROW(f.source_for(args, 1), kiln::DTypeError) << op;
                continue;
            }
            const std::string src = f.source_for(args, 1);
            EXPECT_TRUE(has(src, std::string("// traced: ") + op + "(t")) << op << src;
            if (std::string(op) == "var" || std::string(op) == "std") {
                EXPECT_TRUE(has(src, "kiln_moments_merge(a, b)")) << src;
                EXPECT_TRUE(has(src, "kiln_dof(a.n, S(1))")) << "ddof=1: " << src;
            }
            try {
                EXPECT_TRUE(f.compile_for(args, 1, "sm_90"));
            } catch (const kiln::CompileError& e) {
                ADD_FAILURE() << op << ' ' << kiln::name(d) << ": " << e.what() << "\n" << e.log();
            }
        }
}
