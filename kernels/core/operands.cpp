#include "operands.hpp"

#include "index_math.hpp"
#include "kiln/error.hpp"
#include "scalar_overflow.hpp"

#include <string>

namespace kiln::detail {

OperandSet Operands::of_kind(OperandKind kind, std::size_t first, std::size_t end) const noexcept {
    OperandSet set;
    for (std::size_t k = first; k < end; ++k)
        set[k] = is(k, kind);
    return set;
}

std::size_t Operands::widest_itemsize(const OperandSet& set) const noexcept {
    std::size_t widest = 1;
    for (std::size_t k = 0; k < count; ++k)
        if (set[k]) widest = std::max(widest, itemsize(types[k].dtype));
    return widest;
}

void bind_operands(const KernelParams& params, const Arg* args, std::size_t count, Operands& ops) {
    const std::size_t nin = params.inputs.size(), nout = params.outputs.size();
    if (count != nin && count != nin + nout)
        params.bad_call("takes " + std::to_string(nin) + " input(s)" +
                        (nout ? " optionally followed by " + std::to_string(nout) + " output(s)"
                              : std::string()) +
                        "; " + std::to_string(count) + " argument(s) were given");
    ops.inputs = nin;
    ops.count = nin + nout;
    ops.given = count;
    DType dtypes[kMaxParams];
    bind_types(params, args, count, ops.bindings, dtypes);
    for (std::size_t k = 0; k < ops.count; ++k) {
        const bool given_array = k < count && args[k].is_array();
        ops.types[k].dtype = dtypes[k];
        // `raw` on a scalar means nothing (CuPy ignores it too).
        ops.types[k].kind = k < count && !given_array ? OperandKind::scalar
                            : params[k].raw           ? OperandKind::raw
                                                      : OperandKind::array;
        if (given_array) ops.arrays[k] = args[k].array();
        if (ops.is(k, OperandKind::scalar)) {
            ops.scalars[k] = &args[k].scalar();
            check_fits(args[k].scalar(), dtypes[k], params.who, "parameter", params[k].name);
        }
    }
}

std::optional<Dims> broadcast_inputs(const Operands& ops) {
    // Most calls give inputs of one shape: that shape, without building a broadcast.
    const Dims* first = nullptr;
    bool same = true;
    for (std::size_t k = 0; k < ops.inputs && same; ++k) {
        if (!ops.is(k, OperandKind::array)) continue;
        const Dims& s = ops.arrays[k].shape();
        if (!first)
            first = &s;
        else
            same = s == *first;
    }
    if (same) return first ? std::optional<Dims>(*first) : std::nullopt;
    std::optional<Dims> shape;
    for (std::size_t k = 0; k < ops.inputs; ++k) {
        if (!ops.is(k, OperandKind::array)) continue;
        const Dims& s = ops.arrays[k].shape();
        shape = shape ? broadcast_shapes({*shape, s}) : s;
    }
    return shape;
}

std::optional<Dims> broadcast_to_given_output(const Operands& ops, std::optional<Dims> inputs) {
    for (std::size_t k = ops.inputs; k < ops.given; ++k) {
        if (!ops.is(k, OperandKind::array)) continue;
        const Dims& out = ops.arrays[k].shape();
        // The usual call: the output has the inputs' shape, which broadcasts to itself.
        if (!inputs || *inputs == out) return out;
        try {
            if (broadcast_shapes({*inputs, out}) == out) return out;
        } catch (const ShapeError&) {
            // check_given_outputs says which output does not fit
        }
        return inputs;
    }
    return inputs;
}

void check_given_outputs(const KernelParams& params, const Operands& ops, const Dims& shape,
                         const char* origin) {
    for (std::size_t k = ops.inputs; k < ops.given; ++k) {
        if (!ops.is(k, OperandKind::array) || ops.arrays[k].shape() == shape) continue;
        throw ShapeError(params.who + ": output '" + params[k].name + "' has shape " +
                         ops.arrays[k].shape().to_string() + " but " + origin + " " +
                         shape.to_string());
    }
}

void make_outputs(Operands& ops, const Dims& shape, bool allocate, StreamRef stream) {
    // A made-up address for outputs that are only described: 1 MiB, aligned for any vector.
    constexpr CUdeviceptr kDescribedOnly = CUdeviceptr{1} << 20;
    for (std::size_t k = ops.given; k < ops.count; ++k) {
        const DType dtype = ops.types[k].dtype;
        ops.arrays[k] =
            allocate ? empty(shape, dtype, stream) : Array::wrap(kDescribedOnly, shape, dtype);
    }
}

Dims element_strides(const KernelParams& params, const Operands& ops, std::size_t k, int ndim) {
    const Array& a = ops.arrays[k];
    const auto item = static_cast<std::int64_t>(a.itemsize());
    Dims strides;
    strides.resize(ndim, 0);
    for (int d = 0; d < a.ndim(); ++d) {
        const std::int64_t stride = a.strides()[d];
        if (stride % item != 0)
            params.bad_call("array '" + params[k].name +
                            "' has strides that are not a multiple of its itemsize");
        if (a.shape()[d] == 1) continue; // broadcast: stride 0
        if (stride == 0 && a.shape()[d] > 1 && ops.is_output(k) && ops.is(k, OperandKind::array))
            params.bad_call("output '" + params[k].name +
                            "' is a broadcast view: its elements overlap");
        strides[ndim - a.ndim() + d] = stride / item;
    }
    return strides;
}

namespace {

// Calls @p f(k) for each operand k in @p set, in order: only the operands a call has, not
// kMaxParams of them.
template <class F> void for_each_operand(const OperandSet& set, F&& f) {
    for (auto left = static_cast<std::uint32_t>(set.to_ulong()); left; left &= left - 1)
        f(__builtin_ctz(left));
}

} // namespace

void collapse_axes(Dims& shape, OperandStrides& strides, const OperandSet& walkers, bool merge) {
    // In place: axis d is read before it is overwritten (at <= d), so no second copy is needed.
    int at = 0;
    for (int d = 0; d < shape.size(); ++d) {
        if (shape[d] == 1) continue;
        bool merges = merge && at > 0;
        for_each_operand(walkers, [&](int k) {
            // A product that overflows is no stride of this array: the axes do not merge.
            std::int64_t outer = 0;
            merges = merges && !__builtin_mul_overflow(strides[k][d], shape[d], &outer) &&
                     strides[k][at - 1] == outer;
        });
        if (merges) {
            shape[at - 1] *= shape[d];
            for_each_operand(walkers, [&](int k) { strides[k][at - 1] = strides[k][d]; });
        } else {
            shape[at] = shape[d];
            for_each_operand(walkers, [&](int k) { strides[k][at] = strides[k][d]; });
            ++at;
        }
    }
    shape.resize(at);
    for_each_operand(walkers, [&](int k) { strides[k].resize(at); });
}

bool needs_index64(std::int64_t elements, const Dims& shape, const OperandStrides& strides,
                   const OperandSet& walkers) {
    if (elements >= kIndex32Limit) return true;
    bool needs = false;
    for_each_operand(
        walkers, [&](int k) { needs = needs || max_offset(shape, strides[k]) >= kIndex32Limit; });
    return needs;
}

bool vector_aligned(const Array& array, const Dims& strides, int axis, int vec) {
    if (array.data() % (static_cast<std::size_t>(vec) * array.itemsize()) != 0) return false;
    for (int d = 0; d < strides.size(); ++d)
        if (d != axis && strides[d] % vec != 0) return false;
    return true;
}

} // namespace kiln::detail
