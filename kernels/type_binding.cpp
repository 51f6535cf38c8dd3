#include "type_binding.hpp"

#include "kiln/error.hpp"

#include <string>

namespace kiln::detail {

namespace {

bool is_handle_type(const std::string& type) {
    return type == "cudaTextureObject_t" || type == "cudaSurfaceObject_t";
}

// A texture or surface passes as its 64-bit handle, to a parameter declared as a handle (or a
// placeholder textures bind); a number never reaches a handle parameter.
void check_handle(const KernelParams& params, const Arg& arg, const ParamSpec& spec, DType dtype) {
    const bool handle = arg.handle() != Arg::Handle::none;
    const char* what = arg.handle() == Arg::Handle::surface ? "surface" : "texture";
    if (handle && dtype != DType::uint64)
        params.bad_call("parameter '" + spec.name + "' is " + kiln::name(dtype) + ", but a " +
                        what +
                        " is given: declare it cudaTextureObject_t or "
                        "cudaSurfaceObject_t (or a placeholder no array binds)");
    if (handle && spec.dtype && !is_handle_type(spec.type_text))
        params.bad_call("parameter '" + spec.name + "' is " + spec.type_text + ", but a " + what +
                        " is given: declare it cudaTextureObject_t or cudaSurfaceObject_t");
    if (!handle && spec.dtype == DType::uint64 && is_handle_type(spec.type_text))
        params.bad_call("parameter '" + spec.name + "' is " + spec.type_text +
                        ": give it a kiln::Texture or kiln::Surface, not a number");
}

} // namespace

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
        if (k < nin && !args[k].is_array()) check_handle(params, args[k], spec, dtypes[k]);
    }
}

} // namespace kiln::detail
