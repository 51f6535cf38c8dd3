// Kiln's stand-in for CuPy's <cupy/cuda_workaround.h>: NVRTC has no C++ standard library, so this
// header names libcu++'s type traits, limits, utilities and tuples (the toolkit's <cuda/std/...>)
// in namespace std, for device code written against std:: (std::is_same<T, U>::value,
// std::numeric_limits<T>::max(), std::pair, std::tuple). Only class templates and functions: the
// `_v` and `_t` shorthands are left out, as CuPy leaves them, since code written for CuPy defines
// some of them itself (`namespace std { template <class T, class U> inline constexpr bool
// is_same_v = ...; }`).
#pragma once

#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/tuple>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

namespace std {
// <type_traits>
using cuda::std::add_const;
using cuda::std::add_cv;
using cuda::std::add_lvalue_reference;
using cuda::std::add_pointer;
using cuda::std::add_rvalue_reference;
using cuda::std::add_volatile;
using cuda::std::alignment_of;
using cuda::std::common_type;
using cuda::std::conditional;
using cuda::std::decay;
using cuda::std::enable_if;
using cuda::std::false_type;
using cuda::std::integral_constant;
using cuda::std::is_arithmetic;
using cuda::std::is_array;
using cuda::std::is_base_of;
using cuda::std::is_const;
using cuda::std::is_convertible;
using cuda::std::is_enum;
using cuda::std::is_floating_point;
using cuda::std::is_function;
using cuda::std::is_integral;
using cuda::std::is_lvalue_reference;
using cuda::std::is_pointer;
using cuda::std::is_reference;
using cuda::std::is_same;
using cuda::std::is_signed;
using cuda::std::is_unsigned;
using cuda::std::is_void;
using cuda::std::is_volatile;
using cuda::std::make_signed;
using cuda::std::make_unsigned;
using cuda::std::remove_const;
using cuda::std::remove_cv;
using cuda::std::remove_pointer;
using cuda::std::remove_reference;
using cuda::std::remove_volatile;
using cuda::std::true_type;
// <limits>
using cuda::std::numeric_limits;
// <utility>
using cuda::std::declval;
using cuda::std::forward;
using cuda::std::index_sequence;
using cuda::std::integer_sequence;
using cuda::std::make_index_sequence;
using cuda::std::make_integer_sequence;
using cuda::std::make_pair;
using cuda::std::move;
using cuda::std::pair;
using cuda::std::swap;
// <tuple>
using cuda::std::get;
using cuda::std::make_tuple;
using cuda::std::tie;
using cuda::std::tuple;
// <cstdint>
using cuda::std::int16_t;
using cuda::std::int32_t;
using cuda::std::int64_t;
using cuda::std::int8_t;
using cuda::std::uint16_t;
using cuda::std::uint32_t;
using cuda::std::uint64_t;
using cuda::std::uint8_t;
} // namespace std
