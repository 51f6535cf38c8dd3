#include "call_builder.hpp"
#include "front_ends.hpp"
#include "harness_failure.hpp"

#include "kiln/error.hpp"
#include "kiln/reduction_kernel.hpp"

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <vector>

namespace kiln::fuzz {

namespace {

// Axes and keepdims: mostly every axis or one, sometimes a list, repeats, out-of-range values
// and more axes than an array can have.
ReduceCall reduce_call(ByteSource& bytes) {
    ReduceCall how;
    const std::uint8_t b = bytes.byte();
    how.keepdims = (b & 4) != 0;
    auto axis = [&] { return static_cast<int>(static_cast<std::int8_t>(bytes.byte())) % 20; };
    switch (b % 4) {
    case 2:
        how.axis = Axes(axis());
        break;
    case 3: {
        std::vector<int> axes(bytes.pick(kMaxDims + 2));
        for (int& a : axes)
            a = axis();
        how.axis = Axes(axes); // over kMaxDims: AxisError
        break;
    }
    default:
        break;
    }
    return how;
}

// The output shape NumPy gives @p shape reduced as @p how says (the shape itself for bad axes,
// which the kernel refuses anyway).
Dims reduced_shape(const Dims& shape, const ReduceCall& how) {
    std::array<bool, kMaxDims> reduced{};
    for (int d = 0; d < shape.size(); ++d)
        reduced[d] = how.axis.is_all();
    for (int k = 0; k < how.axis.size(); ++k) {
        const int axis = how.axis[k] < 0 ? how.axis[k] + shape.size() : how.axis[k];
        if (axis < 0 || axis >= shape.size()) return shape;
        reduced[axis] = true;
    }
    Dims out;
    for (int d = 0; d < shape.size(); ++d)
        if (!reduced[d] || how.keepdims) out.push_back(reduced[d] ? 1 : shape[d]);
    return out;
}

} // namespace

void run_reduction(const SpecInput& input) {
    ByteSource bytes(input.call_data, input.call_size);
    // Mostly none (the first output's type); a placeholder, dtypes, a type Kiln cannot size.
    static constexpr const char* kReduceTypes[] = {
        "T", "U", "float32", "float64", "int64", "bool", "complex128", "float16", "my_type"};
    const std::uint8_t switches = bytes.byte();
    ReductionOptions options;
    options.reduce_dims = (switches & 1) == 0;
    options.empty_is_error = (switches & 2) != 0;
    const std::size_t type = (switches >> 2) % 16;
    if (type < std::size(kReduceTypes)) options.reduce_type = kReduceTypes[type];
    std::optional<ReductionKernel> kernel;
    try {
        kernel.emplace(input.fields[0], input.fields[1], input.fields[2], input.fields[3],
                       input.fields[4], input.fields[5], input.fields[6], options);
    } catch (const SpecError&) {
        return;
    }
    check(kernel->in_params().size() == parse_param_specs(input.fields[0]).size() &&
              kernel->out_params().size() == parse_param_specs(input.fields[1]).size(),
          "the kernel's parameters are the parsed specs");
    for (int c = 0; c < kCallsPerKernel && (c == 0 || !bytes.empty()); ++c) {
        FuzzCall call;
        try {
            const ReduceCall how = reduce_call(bytes);
            build_call(kernel->in_params(), kernel->out_params(), bytes, call,
                       [&](const Dims& shape) { return reduced_shape(shape, how); });
            const std::string source = kernel->source_for(call.args.data(), call.args.size(), how);
            check(defines_kernel(source, kernel->name()),
                  "the generated source defines the kernel");
        } catch (const ArgumentError&) { // AxisError included
        } catch (const ShapeError&) {
        }
    }
}

} // namespace kiln::fuzz
