#pragma once
// The parameters of a generated kernel as its constructor is given them: its name and its parsed
// input and output specs, checked once against what every front end requires (a C identifier
// for a name, unique parameter names, at most kMaxParams parameters and Outputs::kCapacity
// outputs). Every message about the kernel starts with `who`, e.g. "ElementwiseKernel 'add'".

#include "kiln/param_spec.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace kiln::detail {

struct KernelParams {
    /// @p front_end names the kind of kernel in messages ("ElementwiseKernel").
    /// @throws SpecError for a name that is not a C identifier, a spec that does not parse, a
    /// name used twice, or too many parameters or outputs.
    KernelParams(const char* front_end, std::string kernel_name, const std::string& in_text,
                 const std::string& out_text);

    std::string name;
    std::string who;
    std::string in_spec, out_spec; ///< the specs as given
    std::vector<ParamSpec> inputs, outputs;
    std::vector<ParamSpec> all; ///< inputs then outputs

    std::size_t count() const noexcept { return all.size(); }
    bool is_output(std::size_t k) const noexcept { return k >= inputs.size(); }
    const ParamSpec& operator[](std::size_t k) const noexcept { return all[k]; }

    /// @throws ArgumentError "<who>: <what>", about a call.
    [[noreturn]] void bad_call(const std::string& what) const;
    /// @throws SpecError "<who>: <what>", about the kernel's definition.
    [[noreturn]] void bad_spec(const std::string& what) const;
};

} // namespace kiln::detail
