#include "kernel_description.hpp"

#include <nlohmann/json.hpp>

#include <utility>

namespace kiln::detail {

namespace {

using Json = nlohmann::ordered_json;

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

struct KernelDescription::Fields {
    std::string front_end;
    Json spec;
    Json call = Json::object();
};

KernelDescription::KernelDescription(const char* front_end, const KernelParams& params)
    : m_fields(std::make_unique<Fields>()) {
    m_fields->front_end = front_end;
    m_fields->spec =
        Json{{"name", params.name}, {"in_params", params.in_spec}, {"out_params", params.out_spec}};
}

KernelDescription::~KernelDescription() = default;
KernelDescription::KernelDescription(KernelDescription&&) noexcept = default;
KernelDescription& KernelDescription::operator=(KernelDescription&&) noexcept = default;

void KernelDescription::spec(const char* field, const std::string& value) {
    m_fields->spec[field] = value;
}

void KernelDescription::spec_text(const char* field, const std::string& value) {
    if (!value.empty()) spec(field, value);
}

void KernelDescription::spec_flag(const char* field, bool value) {
    m_fields->spec[field] = value;
}

void KernelDescription::spec_options(const std::vector<std::string>& nvrtc_options) {
    if (!nvrtc_options.empty()) m_fields->spec["options"] = nvrtc_options;
}

void KernelDescription::call(const char* field, std::int64_t value) {
    m_fields->call[field] = value;
}

void KernelDescription::call(const char* field, const std::vector<int>& values) {
    m_fields->call[field] = values;
}

void KernelDescription::call_flag(const char* field, bool value) {
    m_fields->call[field] = value;
}

std::string KernelDescription::text(const Operands& ops) const {
    Json description{{m_fields->front_end, m_fields->spec}, {"args", Json::array()}};
    // The arguments as given: inputs, then the outputs when the call gave them.
    for (std::size_t k = 0; k < ops.given; ++k)
        description["args"].push_back(describe_argument(ops, k));
    for (const auto& field : m_fields->call.items())
        description[field.key()] = field.value();
    // Code that is not UTF-8 (JSON's encoding) has its bad bytes replaced rather than failing a
    // call: its description then no longer replays the kernel, which still compiles and runs.
    return description.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace kiln::detail
