#include "kernel_params.hpp"

#include "kiln/call_arguments.hpp"
#include "kiln/error.hpp"
#include "signature.hpp"

#include <algorithm>
#include <cctype>

namespace kiln::detail {

namespace {

bool is_identifier(const std::string& s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    return std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
    });
}

} // namespace

KernelParams::KernelParams(const char* front_end, std::string kernel_name,
                           const std::string& in_text, const std::string& out_text)
    : name(std::move(kernel_name))
    , who(std::string(front_end) + " '" + name + "'")
    , in_spec(in_text)
    , out_spec(out_text) {
    if (!is_identifier(name)) throw SpecError("kernel name '" + name + "' is not a C identifier");
    inputs = parse_param_specs(in_spec);
    outputs = parse_param_specs(out_spec);
    check_unique_names(inputs, outputs, in_spec, out_spec);
    if (inputs.size() + outputs.size() > static_cast<std::size_t>(kMaxParams))
        bad_spec("at most " + std::to_string(kMaxParams) + " parameters");
    // A call returns its outputs in an Outputs: a kernel with more could launch, then not return.
    if (outputs.size() > Outputs::kCapacity)
        bad_spec("at most " + std::to_string(Outputs::kCapacity) + " output parameters");
    all = inputs;
    all.insert(all.end(), outputs.begin(), outputs.end());
}

void KernelParams::bad_call(const std::string& what) const {
    throw ArgumentError(who + ": " + what);
}

void KernelParams::bad_spec(const std::string& what) const {
    throw SpecError(who + ": " + what);
}

} // namespace kiln::detail
