#pragma once
/// @file
/// CuPy's kernel parameter specs: `"T x, raw T y, float32 alpha"`. Each parameter is an optional
/// `raw`, a type (a dtype name or a one-letter type placeholder) and a name.

#include "kiln/dtype.hpp"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct ParamSpec {
    std::string name;
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
std::vector<ParamSpec> parse_param_specs(const std::string& spec);

/// Check that names are unique across inputs and outputs.
/// @throws SpecError naming the duplicate.
void check_unique_names(const std::vector<ParamSpec>& inputs, const std::vector<ParamSpec>& outputs,
                        const std::string& in_spec, const std::string& out_spec);

} // namespace kiln
