#pragma once
// The steps every generated-kernel front end offers in the same shape, written once over the
// front end's own Impl and planned-call types, so that two front ends never carry copies that
// drift: compiling a planned call (through its memo signature), and the accessors that plan a
// call without running it (source_for, compile_for, describe_for).
//
// A front end's Impl provides:
//   void plan_only(const Arg* args, std::size_t count, const Call& call, PlannedCall& p) const;
//       binding, shapes and layout with no allocation (what a real call does first)
//   GeneratedSource source(const PlannedCall& p) const;
//   std::string describe(const PlannedCall& p) const;
//   std::optional<cache::Key> signature(const PlannedCall& p, const std::string& arch) const;
//   def.params (KernelParams) and nvrtc_options (its extra NVRTC options)

#include "kiln/call_arguments.hpp"
#include "kiln/compiler.hpp"

#include "specialization_memo.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace kiln::detail {

/// Compile @p p for @p arch: through its memo signature unless @p memo is false.
template <class Impl, class PlannedCall>
CompiledSpecialization compile_planned(const Impl& impl, const PlannedCall& p,
                                       const std::string& arch, bool memo = true) {
    return compile_memoized(
        impl.def.params, memo ? impl.signature(p, arch) : std::nullopt, impl.nvrtc_options, arch,
        [&] { return impl.source(p); }, [&] { return impl.describe(p); });
}

/// The function of @p p for @p arch, loaded: compiled through its memo, and compiled in full when
/// the driver rejects what the memo gave (load_memoized()).
template <class Impl, class PlannedCall>
Function load_planned(const Impl& impl, const PlannedCall& p, const std::string& arch) {
    return load_memoized(impl.def.params, compile_planned(impl, p, arch),
                         [&] { return compile_planned(impl, p, arch, /*memo=*/false); });
}

/// source_for / compile_for / describe_for of a front end, over its Impl.
template <class PlannedCall, class Impl, class Call>
std::string source_for(const Impl& impl, const Arg* args, std::size_t count, const Call& call) {
    PlannedCall p;
    impl.plan_only(args, count, call, p);
    return impl.source(p).source;
}

template <class PlannedCall, class Impl, class Call>
std::shared_ptr<const Program> compile_for(const Impl& impl, const Arg* args, std::size_t count,
                                           const Call& call, const std::string& arch) {
    PlannedCall p;
    impl.plan_only(args, count, call, p);
    return compile_planned(impl, p, arch).program;
}

template <class PlannedCall, class Impl, class Call>
std::string describe_for(const Impl& impl, const Arg* args, std::size_t count, const Call& call) {
    PlannedCall p;
    impl.plan_only(args, count, call, p);
    return impl.describe(p);
}

} // namespace kiln::detail
