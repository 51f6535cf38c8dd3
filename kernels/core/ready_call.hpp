#pragma once
// The argument list of a ready operation's or reduction's call (kiln::add, kiln::sum, ...): its
// inputs and, when one is given or made, its output, in a fixed array (no allocation per call).

#include "kiln/call_arguments.hpp"

#include <array>
#include <cstddef>
#include <initializer_list>

namespace kiln::detail {

struct ReadyCallArgs {
    std::array<Arg, 4> args{Arg(0), Arg(0), Arg(0), Arg(0)};
    std::size_t count = 0;
};

/// @p inputs (at most three), then @p out when not null.
inline ReadyCallArgs ready_call_args(std::initializer_list<Arg> inputs, const Array* out) {
    ReadyCallArgs r;
    for (const Arg& arg : inputs)
        r.args[r.count++] = arg;
    if (out) r.args[r.count++] = Arg(*out);
    return r;
}

} // namespace kiln::detail
