#pragma once
/// @file
/// CuPy's kernel parameter specs: `"T x, raw T y, float32 alpha"`. Each parameter is an optional
/// `raw`, a type (a dtype name or a one-letter type placeholder) and a name. ElementwiseKernel and
/// ReductionKernel parse their specs with these functions; a spec that does not parse is a
/// SpecError with a caret under the fault.

#include "kiln/dtype.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// One parsed parameter.
struct ParamSpec {
    /// The parameter's name, as the kernel's code refers to it.
    std::string name;
    /// Whether it was marked `raw`: the whole array is passed, not the current element.
    bool raw = false;
    /// A fixed dtype, or nullopt for a placeholder.
    std::optional<DType> dtype;
    /// The placeholder letter (when dtype is nullopt), e.g. "T".
    std::string placeholder;
    /// The type as written, e.g. "float32" or "T".
    std::string type_text;
};

/// Parse a comma-separated parameter list. An empty or blank spec gives no parameters.
/// @throws SpecError showing the spec with a caret under the fault (unknown type, missing name,
/// a name that is not an identifier or is reserved, a duplicate name, a stray token).
/// @param spec the spec, e.g. `"T x, raw T y, float32 alpha"`.
/// @return the parameters, in order.
std::vector<ParamSpec> parse_param_specs(const std::string& spec);

/// Check that names are unique across inputs and outputs.
/// @param inputs the parsed input parameters.
/// @param outputs the parsed output parameters.
/// @param in_spec the input spec as written, for the message.
/// @param out_spec the output spec as written, for the message.
/// @throws SpecError naming the duplicate.
void check_unique_names(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                        const std::string& in_spec, const std::string& out_spec);

} // namespace kiln
