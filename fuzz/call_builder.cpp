#include "call_builder.hpp"

#include "kiln/error.hpp"

#include <array>
#include <complex>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>

namespace kiln::fuzz {

namespace {

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

// Extents: mostly small or at a layout's threshold (vector widths, 16 x 16 tiles, 64-element
// rows, the grid's 65535), sometimes negative, around the powers of two where kernels index in 64
// bits and where sizes stop fitting in 64 bits, or the largest int64.
std::int64_t extent(ByteSource& bytes) {
    static constexpr std::int64_t kCommon[] = {1,  2,  3,  4,   1, 8, 16, 17,
                                               32, 64, 65, 100, 0, 1, 7,  256};
    static constexpr std::int64_t kThresholds[] = {5,    15,    31,    33,      63, 127, 255, 1000,
                                                   4096, 65535, 65536, 1048577, -1, -2,  0,   1};
    static constexpr int kPowers[] = {30, 31, 32, 40, 62};
    const std::uint8_t b = bytes.byte();
    if (b < 224) return kCommon[b % std::size(kCommon)];
    if (b < 240) return kThresholds[b - 224];
    if (b == 255) return kInt64Max;
    const int k = b - 240; // 2^p - 1, 2^p, 2^p + 1
    return (std::int64_t{1} << kPowers[k / 3]) + (k % 3 - 1);
}

// Mostly 0 to 4 dimensions; now and then up to 20, past kMaxDims.
int ndim(ByteSource& bytes) {
    const std::uint8_t b = bytes.byte();
    return b < 240 ? b % 5 : b - 240 + 5;
}

// The next stride of a dense layout, left as it is where it would overflow.
std::int64_t grow(std::int64_t step, std::int64_t extent) {
    std::int64_t next = 0;
    return extent > 0 && !__builtin_mul_overflow(step, extent, &next) ? next : step;
}

Dims random_shape(ByteSource& bytes) {
    Dims shape;
    const int n = ndim(bytes);
    for (int d = 0; d < n; ++d)
        shape.push_back(extent(bytes));
    return shape;
}

// A shape that broadcasts against @p loop: a suffix of it with some extents set to 1.
Dims broadcastable(const Dims& loop, ByteSource& bytes) {
    const int drop = static_cast<int>(bytes.pick(static_cast<std::size_t>(loop.size()) + 1));
    Dims shape;
    for (int d = drop; d < loop.size(); ++d)
        shape.push_back(bytes.pick(4) == 0 ? 1 : loop[d]);
    return shape;
}

// Strides in bytes: none (C order), Fortran order, a multiple of C order (steps, negative ones),
// or any values (zero, unaligned, huge).
Dims strides_for(const Dims& shape, std::size_t item, ByteSource& bytes) {
    const auto itemsize = static_cast<std::int64_t>(item);
    Dims strides;
    switch (bytes.pick(6)) {
    case 0:
    case 1:
    case 2:
        return strides;
    case 3: { // Fortran order
        strides.resize(shape.size());
        std::int64_t step = itemsize;
        for (int d = 0; d < shape.size(); ++d) {
            strides[d] = step;
            step = grow(step, shape[d]);
        }
        return strides;
    }
    case 4: { // C order times a factor
        static constexpr std::int64_t kFactors[] = {2, 3, -1, -2};
        const std::int64_t factor = kFactors[bytes.pick(4)];
        strides.resize(shape.size());
        std::int64_t step = itemsize * factor;
        for (int d = shape.size() - 1; d >= 0; --d) {
            strides[d] = step;
            step = grow(step, shape[d]);
        }
        return strides;
    }
    default: { // anything
        for (int d = 0; d < shape.size(); ++d) {
            const std::uint8_t b = bytes.byte();
            switch (b % 6) {
            case 0:
                strides.push_back(0);
                break;
            case 1:
                strides.push_back(itemsize * (b / 6 % 8 + 1));
                break;
            case 2:
                strides.push_back(-itemsize * (b / 6 % 8 + 1));
                break;
            case 3:
                strides.push_back(b / 6 % 7 + 1); // not a multiple of the itemsize, mostly
                break;
            case 4:
                strides.push_back(itemsize << (b / 6 % 40));
                break;
            default:
                strides.push_back(static_cast<std::int64_t>(bytes.u64()));
                break;
            }
        }
        return strides;
    }
    }
}

Scalar scalar(ByteSource& bytes) {
    const std::uint8_t v = bytes.byte();
    switch (bytes.pick(15)) {
    case 0:
        return Scalar((v & 1) != 0);
    case 1:
        return Scalar(static_cast<std::int8_t>(v));
    case 2:
        return Scalar(static_cast<std::int16_t>(v));
    case 3:
        return Scalar(static_cast<std::int32_t>(v));
    case 4:
        return Scalar(static_cast<std::int64_t>(v));
    case 5:
        return Scalar(static_cast<std::uint8_t>(v));
    case 6:
        return Scalar(static_cast<std::uint16_t>(v));
    case 7:
        return Scalar(static_cast<std::uint32_t>(v));
    case 8:
        return Scalar(static_cast<std::uint64_t>(v));
    case 9:
        return Scalar(float16{v});
    case 10:
        return Scalar(bfloat16{v});
    case 11:
        return Scalar(static_cast<float>(v));
    case 12:
        return Scalar(static_cast<double>(v));
    case 13:
        return Scalar(std::complex<float>(v, 1));
    default:
        return Scalar(std::complex<double>(v, -1));
    }
}

DType any_dtype(ByteSource& bytes) {
    return static_cast<DType>(bytes.pick(kDTypeCount));
}

// Builds the arguments one by one; remembers the dtype it gave each placeholder.
class Builder {
  public:
    Builder(ByteSource& bytes, FuzzCall& call)
        : m_bytes(bytes)
        , m_call(call) {}

    // A dtype the parameter accepts (most of the time) or any dtype.
    DType dtype_for(const ParamSpec& param) {
        if (m_bytes.pick(8) == 0) return any_dtype(m_bytes);
        if (param.dtype) return *param.dtype;
        auto& bound = m_placeholders[static_cast<unsigned char>(param.placeholder[0]) & 0x7f];
        if (!bound) bound = any_dtype(m_bytes);
        return *bound;
    }

    const Array& array(const Dims& shape, DType dtype) {
        const Dims strides = strides_for(shape, itemsize(dtype), m_bytes);
        // 64 GiB apart; mostly 256-byte aligned, sometimes at any byte.
        const std::uint8_t offset = m_bytes.byte();
        const CUdeviceptr base = CUdeviceptr{m_call.arrays.size() + 1} << 36;
        m_call.arrays.push_back(
            Array::wrap(base + (offset < 192 ? 0 : offset - 192), shape, dtype, strides));
        return m_call.arrays.back();
    }

    void input(const ParamSpec& param, const Dims& loop) {
        const std::uint8_t how = m_bytes.byte();
        if (!param.raw && how % 4 == 3) { // a scalar
            m_call.args.emplace_back(scalar(m_bytes));
            return;
        }
        Dims shape;
        switch (how / 4 % 4) {
        case 0:
        case 1:
            shape = loop;
            break;
        case 2:
            shape = broadcastable(loop, m_bytes);
            break;
        default:
            shape = random_shape(m_bytes);
            break;
        }
        const Array& a = array(shape, dtype_for(param));
        m_call.args.emplace_back(a);
        m_shapes.push_back(a.shape());
    }

    void output(const ParamSpec& param, const Dims& loop, const OutputShape& output_shape) {
        const std::uint8_t how = m_bytes.byte();
        if (how == 255) { // not an array at all
            m_call.args.emplace_back(scalar(m_bytes));
            return;
        }
        Dims shape;
        if (how % 8 == 7) {
            shape = random_shape(m_bytes);
        } else {
            // The broadcast of the inputs, as the kernel will compute it.
            try {
                shape = broadcast_shapes(m_shapes.data(), m_shapes.size());
            } catch (const Error&) {
                shape = loop;
            }
            if (output_shape) shape = output_shape(shape);
        }
        m_call.args.emplace_back(array(shape, dtype_for(param)));
    }

  private:
    ByteSource& m_bytes;
    FuzzCall& m_call;
    std::array<std::optional<DType>, 128> m_placeholders{};
    std::vector<Dims> m_shapes; // of the input arrays
};

} // namespace

void build_call(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                ByteSource& bytes, FuzzCall& call, const OutputShape& output_shape) {
    Builder builder(bytes, call);
    const Dims loop = random_shape(bytes);
    for (const ParamSpec& param : inputs)
        builder.input(param, loop);
    const std::uint8_t outputs_given = bytes.byte();
    if (outputs_given % 2)
        for (const ParamSpec& param : outputs)
            builder.output(param, loop, output_shape);
    // A wrong number of arguments, now and then.
    if (outputs_given == 255 && !call.args.empty()) call.args.pop_back();
    if (outputs_given == 254) call.args.emplace_back(scalar(bytes));

    // size= is how a call over raw arrays only says how many elements it has.
    bool all_raw = true;
    for (const ParamSpec& param : inputs)
        all_raw = all_raw && param.raw;
    const std::uint8_t size = bytes.byte();
    if (size % 8 == 7 || (all_raw && size % 8 != 0)) call.options.size = extent(bytes);
    static constexpr int kBlocks[] = {0, -1, 1, 32, 64, 1024, 1025, 96};
    const std::uint8_t block = bytes.byte();
    if (block % 8 == 7) call.options.block_size = kBlocks[block / 8 % std::size(kBlocks)];
}

} // namespace kiln::fuzz
