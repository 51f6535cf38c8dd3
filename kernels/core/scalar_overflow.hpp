#pragma once
// The OverflowError a scalar that does not fit its target type gives (NumPy 2's rule), shared by
// the kernels' parameters, the ready operations and fusion. The check itself is Scalar::fits;
// the message is built only when it fails, so a call that passes allocates nothing.

#include "kiln/scalar.hpp"

#include <string_view>

namespace kiln::detail {

/// @throws OverflowError "<who>: <what> '<name>' of type <target> cannot hold the scalar
/// <value> ..." (without the quoted name when @p name is empty).
[[noreturn]] void throw_overflow(const Scalar& value, DType target, std::string_view who,
                                 std::string_view what, std::string_view name = {});

/// Throws as throw_overflow() unless @p value fits @p target.
inline void check_fits(const Scalar& value, DType target, std::string_view who,
                       std::string_view what, std::string_view name = {}) {
    if (!value.fits(target)) throw_overflow(value, target, who, what, name);
}

} // namespace kiln::detail
