#include "type_binding.hpp"

#include "kiln/error.hpp"

namespace kiln::detail {

void bind_types(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                const Arg* args, std::size_t count, const std::string& who, Bindings& bindings,
                DType* dtypes) {
    const std::size_t nin = inputs.size(), nout = outputs.size();
    const auto fail = [&](const std::string& what) { throw ArgumentError(who + ": " + what); };
    const auto param = [&](std::size_t k) -> const ParamSpec& {
        return k < nin ? inputs[k] : outputs[k - nin];
    };
    const auto bind = [&](const ParamSpec& spec, DType dtype, bool from_array) {
        if (spec.dtype) {
            if (from_array && *spec.dtype != dtype)
                fail("parameter '" + spec.name + "' is " + kiln::name(*spec.dtype) +
                     " but the array given is " + kiln::name(dtype));
            return;
        }
        auto& slot = bindings[static_cast<unsigned char>(spec.placeholder[0])];
        if (!slot)
            slot = dtype;
        else if (*slot != dtype && from_array)
            fail("type placeholder " + spec.placeholder + " is bound to " + kiln::name(*slot) +
                 ", but parameter '" + spec.name + "' is given " + kiln::name(dtype));
    };
    if (count == nin + nout)
        for (std::size_t k = nin; k < count; ++k) {
            if (!args[k].is_array())
                fail("output '" + param(k).name + "' must be an array, not a scalar");
            bind(param(k), args[k].array().dtype(), true);
        }
    for (std::size_t k = 0; k < nin; ++k)
        if (args[k].is_array()) bind(param(k), args[k].array().dtype(), true);
    for (std::size_t k = 0; k < nin; ++k)
        if (!args[k].is_array()) {
            if (param(k).raw)
                fail("raw parameter '" + param(k).name + "' needs an array, not a scalar");
            bind(param(k), args[k].scalar().dtype(), false);
        }
    for (std::size_t k = 0; k < nin + nout; ++k) {
        const ParamSpec& spec = param(k);
        if (spec.dtype) {
            dtypes[k] = *spec.dtype;
        } else if (const auto bound = bindings[static_cast<unsigned char>(spec.placeholder[0])]) {
            dtypes[k] = *bound;
        } else {
            fail("cannot tell the type of '" + spec.name + "': placeholder " + spec.placeholder +
                 " is bound by no argument (give the output)");
        }
    }
}

} // namespace kiln::detail
