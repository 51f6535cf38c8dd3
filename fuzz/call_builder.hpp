#pragma once
// The arguments of one call, described by fuzz bytes: arrays (Array::wrap over made-up addresses,
// so nothing is allocated or launched) and scalars, with dtypes, shapes, strides and alignment
// taken from the bytes, and the call's options. Shared by every front end the spec fuzzer drives.

#include "fuzz_input.hpp"

#include "kiln/array.hpp"
#include "kiln/elementwise_kernel.hpp"
#include "kiln/param_spec.hpp"

#include <deque>
#include <functional>
#include <vector>

namespace kiln::fuzz {

struct FuzzCall {
    std::vector<Arg> args;
    CallOptions options;
    std::deque<Array> arrays; ///< what the array Args point to (a deque keeps them in place)

    FuzzCall() = default;
    FuzzCall(const FuzzCall&) = delete; // Args point into arrays
    FuzzCall& operator=(const FuzzCall&) = delete;
};

/// The shape a front end gives its outputs for inputs that broadcast to @p shape.
using OutputShape = std::function<Dims(const Dims& shape)>;

/// Describe a call to a kernel with @p inputs and @p outputs into @p call: one argument per input,
/// then, when the bytes say so, one per output, mostly of the shape @p output_shape gives (the
/// broadcast shape when empty). Dtypes mostly follow the specs (a fixed dtype, one dtype per
/// placeholder) and shapes mostly broadcast, so that most calls get past the argument checks, but
/// any dtype, shape, stride, alignment or argument count can come.
/// @throws ArgumentError for descriptions Array::wrap refuses (a negative extent, more than
/// kMaxDims dimensions, sizes over 64 bits).
void build_call(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                ByteSource& bytes, FuzzCall& call, const OutputShape& output_shape = {});

} // namespace kiln::fuzz
