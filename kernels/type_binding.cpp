#include "type_binding.hpp"

#include "kiln/error.hpp"

#include <string>

namespace kiln::detail {

void bind_types(const KernelParams& params, const Arg* args, std::size_t count, Bindings& bindings,
                DType* dtypes) {
    const std::size_t nin = params.inputs.size(), nout = params.outputs.size();
    const auto fail = [&](const std::string& what) { params.bad_call(what); };
    const auto param = [&](std::size_t k) -> const ParamSpec& { return params[k]; };
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
