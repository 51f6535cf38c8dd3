#pragma once
// The front end's description of one generated kernel as one call specializes it, in JSON: the
// text CompileOptions::description carries into the cache entry's recipe, and a `kiln warm`
// manifest entry as it is, so a kernel can be compiled again without the program that made it.
//
//   {"<front end>": {"name": ..., "in_params": ..., "out_params": ..., <the front end's spec>},
//    "args": [<argument>...], <the front end's call settings>}
//
// The front end is "elementwise" or "reduction"; its spec holds the code and switches the kernel
// was made with (fields at their default are left out). Each argument given, inputs then any
// outputs, is {"dtype": "float32", "scalar": true} or {"dtype": "float32", "shape": [...]} with
// "strides" (in elements) when the array is not C-contiguous and "offset" (its address modulo 16
// bytes, which decides vector loads) when not 0. Call settings: "size" and "block_size" for
// ElementwiseKernel, "axis" (absent: every axis) and "keepdims" for ReductionKernel. Built only
// when a specialization compiles, never on a call that finds its kernel loaded. Fields keep the
// order they are set in. The JSON library stays inside kernel_description.cpp: the front ends
// that describe their calls do not parse it.

#include "kernel_params.hpp"
#include "operands.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::detail {

/// Alignment that decides vector loads: 16 bytes, the widest vector.
inline constexpr CUdeviceptr kDescribedAlignment = 16;

/// One call's description, built field by field.
class KernelDescription {
  public:
    /// A spec that starts {"name", "in_params", "out_params"} as the kernel was given them.
    KernelDescription(const char* front_end, const KernelParams& params);
    ~KernelDescription();
    KernelDescription(KernelDescription&&) noexcept;
    KernelDescription& operator=(KernelDescription&&) noexcept;

    /// Sets the spec's @p field to @p value, even when empty.
    void spec(const char* field, const std::string& value);
    /// Sets the spec's @p field to @p value unless it is empty (the default of every code piece).
    void spec_text(const char* field, const std::string& value);
    /// Sets the spec's @p field to @p value.
    void spec_flag(const char* field, bool value);
    /// Sets the spec's "options" to the kernel's extra NVRTC options, if any.
    void spec_options(const std::vector<std::string>& nvrtc_options);

    /// Call settings, written after "args".
    void call(const char* field, std::int64_t value);
    void call(const char* field, const std::vector<int>& values);
    void call_flag(const char* field, bool value);

    /// {"<front_end>": spec, "args": [the arguments @p ops were given], then the call settings}.
    std::string text(const Operands& ops) const;

  private:
    struct Fields;
    std::unique_ptr<Fields> m_fields;
};

} // namespace kiln::detail
