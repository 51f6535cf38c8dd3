#include "kernel_description.hpp"

#include <utility>

namespace kiln::detail {

namespace {

Json describe_argument(const Operands& ops, std::size_t k) {
    if (ops.is(k, OperandKind::scalar))
        return Json{{"dtype", kiln::name(ops.scalars[k]->dtype())}, {"scalar", true}};
    const Array& a = ops.arrays[k];
    Json arg{{"dtype", kiln::name(a.dtype())}, {"shape", Json::array()}};
    for (std::int64_t extent : a.shape())
        arg["shape"].push_back(extent);
    if (!a.is_c_contiguous()) {
        // Whole elements: a call with other strides fails before it compiles anything.
        const auto item = static_cast<std::int64_t>(a.itemsize());
        Json strides = Json::array();
        for (std::int64_t stride : a.strides())
            strides.push_back(stride / item);
        arg["strides"] = std::move(strides);
    }
    if (const CUdeviceptr offset = a.data() % kDescribedAlignment)
        arg["offset"] = static_cast<std::uint64_t>(offset);
    return arg;
}

} // namespace

Json describe_params(const KernelParams& params) {
    return Json{
        {"name", params.name}, {"in_params", params.in_spec}, {"out_params", params.out_spec}};
}

void describe_text(Json& spec, const char* field, const std::string& value) {
    if (!value.empty()) spec[field] = value;
}

void describe_options(Json& spec, const std::vector<std::string>& nvrtc_options) {
    if (!nvrtc_options.empty()) spec["options"] = nvrtc_options;
}

std::string describe_call(const char* front_end, Json spec, const Operands& ops, const Json& call) {
    Json description{{front_end, std::move(spec)}, {"args", Json::array()}};
    // The arguments as given: inputs, then the outputs when the call gave them.
    for (std::size_t k = 0; k < ops.given; ++k)
        description["args"].push_back(describe_argument(ops, k));
    for (const auto& field : call.items())
        description[field.key()] = field.value();
    // Code that is not UTF-8 (JSON's encoding) has its bad bytes replaced rather than failing a
    // call: its description then no longer replays the kernel, which still compiles and runs.
    return description.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace kiln::detail
