#include "manifest.hpp"

#include "source_file.hpp"

#include "kiln/elementwise_kernel.hpp"
#include "kiln/error.hpp"
#include "kiln/param_spec.hpp"
#include "kiln/raw_kernel.hpp"
#include "kiln/reduction_kernel.hpp"

#include <nlohmann/json.hpp>

#include <complex>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>

namespace kiln::tools {

namespace {

using nlohmann::json;

// Where described arrays claim to live: aligned for any vector, plus the argument's "offset".
constexpr CUdeviceptr kDescribedAddress = CUdeviceptr{1} << 20;
constexpr std::int64_t kVectorAlignment = 16;

// `"field"`, as messages quote fields.
std::string quoted(const std::string& field) {
    return "\"" + field + "\"";
}

std::string joined(std::initializer_list<const char*> names) {
    std::string text;
    for (const char* name : names)
        text += (text.empty() ? "" : ", ") + std::string(name);
    return text;
}

// @p where is the kernel and the object checked: "kernel 2 (elementwise 'scale'): "args"[1]".
void check_fields(const json& object, std::initializer_list<const char*> known,
                  const std::string& where) {
    for (const auto& field : object.items()) {
        bool found = false;
        for (const char* name : known)
            found = found || field.key() == name;
        if (!found)
            throw ArgumentError(where + ": unknown field " + quoted(field.key()) +
                                " (known: " + joined(known) + ")");
    }
}

std::optional<std::string> optional_text(const json& object, const char* field,
                                         const std::string& where) {
    if (!object.contains(field)) return std::nullopt;
    if (!object.at(field).is_string())
        throw ArgumentError(where + ": " + quoted(field) + " must be a string");
    return object.at(field).get<std::string>();
}

std::string required_text(const json& object, const char* field, const std::string& where) {
    auto value = optional_text(object, field, where);
    if (!value) throw ArgumentError(where + ": " + quoted(field) + " is missing");
    return *value;
}

bool flag(const json& object, const char* field, bool fallback, const std::string& where) {
    if (!object.contains(field)) return fallback;
    if (!object.at(field).is_boolean())
        throw ArgumentError(where + ": " + quoted(field) + " must be true or false");
    return object.at(field).get<bool>();
}

std::int64_t integer(const json& value, const std::string& what) {
    if (!value.is_number_integer()) throw ArgumentError(what + " must be an integer");
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        throw ArgumentError(what + " is out of range");
    return value.get<std::int64_t>();
}

int small_integer(const json& value, const std::string& what) {
    const std::int64_t v = integer(value, what);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max())
        throw ArgumentError(what + " is out of range");
    return static_cast<int>(v);
}

std::vector<std::int64_t> integer_list(const json& object, const char* field,
                                       const std::string& where) {
    const json& value = object.at(field);
    const std::string what = where + ": " + quoted(field);
    if (!value.is_array()) throw ArgumentError(what + " must be a list of integers");
    std::vector<std::int64_t> out;
    for (std::size_t k = 0; k < value.size(); ++k)
        out.push_back(integer(value[k], what + "[" + std::to_string(k) + "]"));
    return out;
}

std::vector<std::string> string_list(const json& object, const char* field,
                                     const std::string& where) {
    if (!object.contains(field)) return {};
    const auto& value = object.at(field);
    const std::string message = where + ": " + quoted(field) + " must be a list of strings";
    if (!value.is_array()) throw ArgumentError(message);
    std::vector<std::string> out;
    for (const auto& item : value) {
        if (!item.is_string()) throw ArgumentError(message);
        out.push_back(item.get<std::string>());
    }
    return out;
}

Dims dims(const std::vector<std::int64_t>& values, const std::string& what) {
    if (values.size() > static_cast<std::size_t>(kMaxDims))
        throw ArgumentError(what + " has " + std::to_string(values.size()) +
                            " dimensions; at most " + std::to_string(kMaxDims));
    Dims out;
    for (std::int64_t v : values)
        out.push_back(v);
    return out;
}

// A scalar argument of @p dtype: its value does not shape the kernel, its dtype does.
Scalar scalar_of(DType dtype) {
    switch (dtype) {
    case DType::bool_:
        return Scalar(false);
    case DType::int8:
        return Scalar(std::int8_t{0});
    case DType::int16:
        return Scalar(std::int16_t{0});
    case DType::int32:
        return Scalar(std::int32_t{0});
    case DType::int64:
        return Scalar(std::int64_t{0});
    case DType::uint8:
        return Scalar(std::uint8_t{0});
    case DType::uint16:
        return Scalar(std::uint16_t{0});
    case DType::uint32:
        return Scalar(std::uint32_t{0});
    case DType::uint64:
        return Scalar(std::uint64_t{0});
    case DType::float16:
        return Scalar(float16{0});
    case DType::bfloat16:
        return Scalar(bfloat16{0});
    case DType::float32:
        return Scalar(0.0f);
    case DType::float64:
        return Scalar(0.0);
    case DType::complex64:
        return Scalar(std::complex<float>{});
    case DType::complex128:
        return Scalar(std::complex<double>{});
    }
    return Scalar(0.0);
}

// The arguments of a described call: arrays at a made-up address (nothing is allocated), scalars
// of their dtype. Held together, since each Arg points at its Array.
struct DescribedCall {
    std::vector<Array> arrays;
    std::vector<Arg> args;
};

Array described_array(const json& arg, DType dtype, const std::string& where) {
    if (!arg.contains("shape")) throw ArgumentError(where + ": \"shape\" is missing");
    const Dims shape = dims(integer_list(arg, "shape", where), where + ": \"shape\"");
    Dims strides;
    if (arg.contains("strides")) {
        const std::vector<std::int64_t> elements = integer_list(arg, "strides", where);
        const auto item = static_cast<std::int64_t>(itemsize(dtype));
        for (std::int64_t stride : elements) {
            std::int64_t bytes = 0;
            if (__builtin_mul_overflow(stride, item, &bytes))
                throw ArgumentError(where + ": \"strides\" are out of range");
            strides.push_back(bytes);
        }
        if (strides.size() != shape.size())
            throw ArgumentError(where +
                                ": \"strides\" needs one stride per dimension of \"shape\"");
    }
    std::int64_t offset = 0;
    if (arg.contains("offset")) {
        offset = integer(arg.at("offset"), where + ": \"offset\"");
        if (offset < 0 || offset >= kVectorAlignment)
            throw ArgumentError(where + ": \"offset\" is the address modulo " +
                                std::to_string(kVectorAlignment) + " bytes: 0 to " +
                                std::to_string(kVectorAlignment - 1));
    }
    try {
        return Array::wrap(kDescribedAddress + static_cast<CUdeviceptr>(offset), shape, dtype,
                           strides);
    } catch (const ArgumentError& e) {
        throw ArgumentError(where + ": " + e.what());
    }
}

// Whether input @p k of @p in_params is declared a texture or surface handle: its described
// scalar is then a Texture or Surface (with handle 0), as a handle parameter takes no number. A
// spec that does not parse has none; the kernel made from it reports the fault.
Arg::Handle declared_handle(const std::string& in_params, std::size_t k) {
    try {
        const std::vector<ParamSpec> specs = parse_param_specs(in_params);
        if (k >= specs.size()) return Arg::Handle::none;
        if (specs[k].type_text == "cudaTextureObject_t") return Arg::Handle::texture;
        if (specs[k].type_text == "cudaSurfaceObject_t") return Arg::Handle::surface;
    } catch (const Error&) {
    }
    return Arg::Handle::none;
}

DescribedCall described_call(const json& entry, const std::string& label,
                             const std::string& in_params) {
    if (!entry.contains("args")) throw ArgumentError(label + ": \"args\" is missing");
    const json& list = entry.at("args");
    if (!list.is_array()) throw ArgumentError(label + ": \"args\" must be a list of arguments");
    DescribedCall call;
    call.arrays.resize(list.size()); // stable: each Arg points at its Array
    std::vector<std::optional<Scalar>> scalars(list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
        const json& arg = list[k];
        const std::string where = label + ": \"args\"[" + std::to_string(k) + "]";
        if (!arg.is_object()) throw ArgumentError(where + " is not an object");
        check_fields(arg, {"dtype", "scalar", "shape", "strides", "offset"}, where);
        const std::string dtype_name = required_text(arg, "dtype", where);
        DType dtype;
        try {
            dtype = parse_dtype(dtype_name);
        } catch (const ArgumentError& e) {
            throw ArgumentError(where + ": \"dtype\": " + e.what());
        }
        if (flag(arg, "scalar", false, where)) {
            for (const char* field : {"shape", "strides", "offset"})
                if (arg.contains(field))
                    throw ArgumentError(where + ": a scalar has no " + quoted(field));
            scalars[k] = scalar_of(dtype);
        } else {
            call.arrays[k] = described_array(arg, dtype, where);
        }
    }
    for (std::size_t k = 0; k < list.size(); ++k) {
        const Arg::Handle handle = scalars[k] ? declared_handle(in_params, k) : Arg::Handle::none;
        if (handle == Arg::Handle::texture)
            call.args.emplace_back(Texture{});
        else if (handle == Arg::Handle::surface)
            call.args.emplace_back(Surface{});
        else
            call.args.push_back(scalars[k] ? Arg(*scalars[k]) : Arg(call.arrays[k]));
    }
    return call;
}

// Runs @p check (describing the call), turning what the front end refuses into an ArgumentError
// about the manifest's kernel.
template <class Check> void check_call(const std::string& label, Check&& check) {
    try {
        check();
    } catch (const CompileError&) {
        throw;
    } catch (const Error& e) {
        throw ArgumentError(label + ": the call its \"args\" describe is refused: " + e.what());
    }
}

template <class Make>
auto make_kernel(const std::string& label, const char* front_end, Make&& make) {
    try {
        return make();
    } catch (const Error& e) {
        throw ArgumentError(label + ": " + quoted(front_end) + ": " + e.what());
    }
}

ManifestKernel elementwise_kernel(const json& entry, const std::string& index) {
    const json& spec = entry.at("elementwise");
    const std::string at = index + ": \"elementwise\"";
    if (!spec.is_object()) throw ArgumentError(at + " must be an object (the kernel's spec)");
    check_fields(spec,
                 {"name", "in_params", "out_params", "operation", "preamble", "loop_prep",
                  "after_loop", "options", "no_return", "reduce_dims"},
                 at);
    const std::string name = optional_text(spec, "name", at).value_or("kernel");
    ManifestKernel k;
    k.label = index + " (elementwise '" + name + "')";
    const std::string where = k.label + ": \"elementwise\"";
    ElementwiseOptions options;
    options.preamble = optional_text(spec, "preamble", where).value_or("");
    options.loop_prep = optional_text(spec, "loop_prep", where).value_or("");
    options.after_loop = optional_text(spec, "after_loop", where).value_or("");
    options.options = string_list(spec, "options", where);
    options.no_return = flag(spec, "no_return", false, where);
    options.reduce_dims = flag(spec, "reduce_dims", true, where);
    const std::string in = required_text(spec, "in_params", where);
    const std::string out = required_text(spec, "out_params", where);
    const std::string operation = required_text(spec, "operation", where);

    check_fields(entry, {"elementwise", "args", "size", "block_size"}, k.label);
    CallOptions how;
    if (entry.contains("size")) how.size = integer(entry.at("size"), k.label + ": \"size\"");
    if (entry.contains("block_size"))
        how.block_size = small_integer(entry.at("block_size"), k.label + ": \"block_size\"");
    auto call = std::make_shared<DescribedCall>(described_call(entry, k.label, in));
    auto kernel = make_kernel(k.label, "elementwise", [&] {
        return std::make_shared<const ElementwiseKernel>(in, out, operation, name,
                                                         std::move(options));
    });
    check_call(k.label, [&] { kernel->describe_for(call->args.data(), call->args.size(), how); });
    k.compile = [kernel, call, how](const std::string& arch) {
        return kernel->compile_for(call->args.data(), call->args.size(), how, arch);
    };
    return k;
}

ManifestKernel reduction_kernel(const json& entry, const std::string& index) {
    const json& spec = entry.at("reduction");
    const std::string at = index + ": \"reduction\"";
    if (!spec.is_object()) throw ArgumentError(at + " must be an object (the kernel's spec)");
    check_fields(spec,
                 {"name", "in_params", "out_params", "map_expr", "reduce_expr", "post_map_expr",
                  "identity", "reduce_type", "preamble", "options", "reduce_dims",
                  "empty_is_error"},
                 at);
    const std::string name = optional_text(spec, "name", at).value_or("reduce_kernel");
    ManifestKernel k;
    k.label = index + " (reduction '" + name + "')";
    const std::string where = k.label + ": \"reduction\"";
    ReductionOptions options;
    options.reduce_type = optional_text(spec, "reduce_type", where).value_or("");
    options.preamble = optional_text(spec, "preamble", where).value_or("");
    options.options = string_list(spec, "options", where);
    options.reduce_dims = flag(spec, "reduce_dims", true, where);
    options.empty_is_error = flag(spec, "empty_is_error", false, where);
    const std::string in = required_text(spec, "in_params", where);
    const std::string out = required_text(spec, "out_params", where);
    const std::string map_expr = required_text(spec, "map_expr", where);
    const std::string reduce_expr = required_text(spec, "reduce_expr", where);
    const std::string post_map_expr = required_text(spec, "post_map_expr", where);
    const std::string identity = optional_text(spec, "identity", where).value_or("");

    check_fields(entry, {"reduction", "args", "axis", "keepdims"}, k.label);
    ReduceCall how;
    if (entry.contains("axis")) {
        const json& axis = entry.at("axis");
        const std::string what = k.label + ": \"axis\"";
        if (axis.is_array()) {
            std::vector<int> axes;
            for (std::size_t a = 0; a < axis.size(); ++a)
                axes.push_back(small_integer(axis[a], what + "[" + std::to_string(a) + "]"));
            if (axes.size() > static_cast<std::size_t>(kMaxDims))
                throw ArgumentError(what + ": at most " + std::to_string(kMaxDims) + " axes");
            how.axis = Axes(axes);
        } else {
            how.axis = Axes(small_integer(axis, what + " (one axis, or a list of them)"));
        }
    }
    how.keepdims = flag(entry, "keepdims", false, k.label);
    auto call = std::make_shared<DescribedCall>(described_call(entry, k.label, in));
    auto kernel = make_kernel(k.label, "reduction", [&] {
        return std::make_shared<const ReductionKernel>(
            in, out, map_expr, reduce_expr, post_map_expr, identity, name, std::move(options));
    });
    check_call(k.label, [&] { kernel->describe_for(call->args.data(), call->args.size(), how); });
    k.compile = [kernel, call, how](const std::string& arch) {
        return kernel->compile_for(call->args.data(), call->args.size(), how, arch);
    };
    return k;
}

ManifestKernel raw_kernel(const json& entry, const std::string& index,
                          const std::filesystem::path& base) {
    ManifestKernel k;
    k.label = index;
    check_fields(entry, {"source", "file", "options", "name_expressions"}, k.label);
    std::string source;
    if (entry.contains("source")) {
        source = required_text(entry, "source", k.label);
    } else {
        const std::filesystem::path file = required_text(entry, "file", k.label);
        k.label += " (" + file.string() + ")";
        source = read_user_file(file.is_absolute() ? file : base / file, "the file of " + k.label);
    }
    CompileOptions options;
    options.options = string_list(entry, "options", k.label);
    options.name_expressions = string_list(entry, "name_expressions", k.label);
    k.compile = [source = std::move(source),
                 options = std::move(options)](const std::string& arch) {
        CompileOptions for_arch = options;
        for_arch.arch = arch;
        // As a RawKernel compiles it (CuPy's headers for source that includes them): same key.
        return RawModule(source, for_arch).compile();
    };
    return k;
}

ManifestKernel read_kernel(const json& entry, std::size_t position,
                           const std::filesystem::path& base) {
    const std::string index = "kernel " + std::to_string(position);
    if (!entry.is_object()) throw ArgumentError(index + " is not an object");
    int kinds = 0;
    for (const char* kind : {"source", "file", "elementwise", "reduction"})
        kinds += entry.contains(kind) ? 1 : 0;
    if (kinds != 1) {
        // An entry of no known kind: a misspelt front end reads better as an unknown field.
        for (const auto& field : entry.items())
            if (kinds == 0 && field.key() != "options" && field.key() != "name_expressions" &&
                field.key() != "args")
                throw ArgumentError(index + ": unknown field " + quoted(field.key()) +
                                    " (a kernel is CUDA source, \"source\" or \"file\", or a "
                                    "front end's kernel, \"elementwise\" or \"reduction\")");
        throw ArgumentError(index + " needs exactly one of \"source\", \"file\" (CUDA source), "
                                    "\"elementwise\" or \"reduction\" (a front end's kernel)");
    }
    if (entry.contains("elementwise")) return elementwise_kernel(entry, index);
    if (entry.contains("reduction")) return reduction_kernel(entry, index);
    return raw_kernel(entry, index, base);
}

} // namespace

std::vector<ManifestKernel> read_manifest(const std::string& path) {
    const std::string text = read_user_file(path, "manifest");
    json manifest;
    try {
        manifest = json::parse(text);
    } catch (const json::parse_error& e) {
        throw ArgumentError("manifest '" + path + "' is not JSON: " + e.what());
    }
    if (!manifest.is_object() || !manifest.contains("kernels") || !manifest["kernels"].is_array())
        throw ArgumentError("manifest '" + path + "' needs a \"kernels\" list");
    const auto base = std::filesystem::path(path).parent_path();
    std::vector<ManifestKernel> kernels;
    for (const auto& entry : manifest["kernels"])
        kernels.push_back(read_kernel(entry, kernels.size(), base));
    return kernels;
}

} // namespace kiln::tools
