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
[[noreturn, gnu::noinline, gnu::cold]] void bad_handle(const KernelParams& params, const Arg& arg,
                                                       const ParamSpec& spec, DType dtype) {
    const bool handle = arg.handle() != Arg::Handle::none;
    const char* what = arg.handle() == Arg::Handle::surface ? "surface" : "texture";
    if (handle && dtype != DType::uint64)
        params.bad_call("parameter '" + spec.name + "' is " + kiln::name(dtype) + ", but a " +
                        what +
                        " is given: declare it cudaTextureObject_t or "
                        "cudaSurfaceObject_t (or a placeholder no array binds)");
    if (handle)
        params.bad_call("parameter '" + spec.name + "' is " + spec.type_text + ", but a " + what +
                        " is given: declare it cudaTextureObject_t or cudaSurfaceObject_t");
    params.bad_call("parameter '" + spec.name + "' is " + spec.type_text +
                    ": give it a kiln::Texture or kiln::Surface, not a number");
}

// The checks inline, their messages out of line: this runs for every scalar on every call.
void check_handle(const KernelParams& params, const Arg& arg, const ParamSpec& spec, DType dtype) {
    const bool handle = arg.handle() != Arg::Handle::none;
    if (!handle && spec.dtype != DType::uint64) return; // a number for a non-handle parameter
    if ((handle && dtype != DType::uint64) ||
        (handle && spec.dtype && !is_handle_type(spec.type_text)) ||
        (!handle && is_handle_type(spec.type_text)))
        bad_handle(params, arg, spec, dtype);
}

[[noreturn, gnu::noinline, gnu::cold]] void output_not_array(const KernelParams& params,
                                                             const ParamSpec& spec) {
    params.bad_call("output '" + spec.name + "' must be an array, not a scalar");
}

[[noreturn, gnu::noinline, gnu::cold]] void wrong_array_type(const KernelParams& params,
                                                             const ParamSpec& spec, DType given) {
    params.bad_call("parameter '" + spec.name + "' is " + kiln::name(*spec.dtype) +
                    " but the array given is " + kiln::name(given));
}

[[noreturn, gnu::noinline, gnu::cold]] void
conflicting_binding(const KernelParams& params, const ParamSpec& spec, DType bound, DType given) {
    params.bad_call("type placeholder " + spec.placeholder + " is bound to " + kiln::name(bound) +
                    ", but parameter '" + spec.name + "' is given " + kiln::name(given));
}

[[noreturn, gnu::noinline, gnu::cold]] void unbound_placeholder(const KernelParams& params,
                                                                const ParamSpec& spec) {
    params.bad_call("cannot tell the type of '" + spec.name + "': placeholder " + spec.placeholder +
                    " is bound by no argument (give the output)");
}

// Parameter @p spec given @p dtype: a fixed type must match an array's; a placeholder binds to its
// first type, and a later array must agree (a scalar takes the bound type).
inline void bind(const KernelParams& params, Bindings& bindings, const ParamSpec& spec, DType dtype,
                 bool from_array) {
    if (spec.dtype) {
        if (from_array && *spec.dtype != dtype) wrong_array_type(params, spec, dtype);
        return;
    }
    auto& slot = bindings[static_cast<unsigned char>(spec.placeholder[0])];
    if (!slot)
        slot = dtype;
    else if (*slot != dtype && from_array)
        conflicting_binding(params, spec, *slot, dtype);
}

} // namespace

void bind_types(const KernelParams& params, const Arg* args, std::size_t count, Bindings& bindings,
                DType* dtypes) {
    const std::size_t nin = params.inputs.size(), nout = params.outputs.size();
    if (count == nin + nout)
        for (std::size_t k = nin; k < count; ++k) {
            if (!args[k].is_array()) output_not_array(params, params[k]);
            bind(params, bindings, params[k], args[k].array().dtype(), true);
        }
    for (std::size_t k = 0; k < nin; ++k)
        if (args[k].is_array()) bind(params, bindings, params[k], args[k].array().dtype(), true);
    for (std::size_t k = 0; k < nin; ++k)
        if (!args[k].is_array()) bind(params, bindings, params[k], args[k].scalar().dtype(), false);
    for (std::size_t k = 0; k < nin + nout; ++k) {
        const ParamSpec& spec = params[k];
        if (spec.dtype) {
            dtypes[k] = *spec.dtype;
        } else if (const auto bound = bindings[static_cast<unsigned char>(spec.placeholder[0])]) {
            dtypes[k] = *bound;
        } else {
            unbound_placeholder(params, spec);
        }
        if (k < nin && !args[k].is_array()) check_handle(params, args[k], spec, dtypes[k]);
    }
}

} // namespace kiln::detail
