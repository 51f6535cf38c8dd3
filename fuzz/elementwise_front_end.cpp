#include "call_builder.hpp"
#include "front_ends.hpp"
#include "harness_failure.hpp"

#include "kiln/elementwise_kernel.hpp"
#include "kiln/error.hpp"

#include <optional>

namespace kiln::fuzz {

bool defines_kernel(const std::string& source, const std::string& name) {
    return source.find(" " + name + "(const kiln_params _kiln_p)") != std::string::npos;
}

void run_elementwise(const SpecInput& input) {
    ByteSource bytes(input.call_data, input.call_size);
    ElementwiseOptions options;
    options.reduce_dims = !bytes.flag();
    std::optional<ElementwiseKernel> kernel;
    try {
        kernel.emplace(input.fields[0], input.fields[1], input.fields[2], input.fields[3], options);
    } catch (const SpecError&) {
        return;
    }
    check(kernel->in_params().size() == parse_param_specs(input.fields[0]).size() &&
              kernel->out_params().size() == parse_param_specs(input.fields[1]).size(),
          "the kernel's parameters are the parsed specs");
    for (int c = 0; c < kCallsPerKernel && (c == 0 || !bytes.empty()); ++c) {
        FuzzCall call;
        try {
            build_call(kernel->in_params(), kernel->out_params(), bytes, call);
            const std::string source =
                kernel->source_for(call.args.data(), call.args.size(), call.options);
            check(defines_kernel(source, kernel->name()),
                  "the generated source defines the kernel");
        } catch (const ArgumentError&) {
        } catch (const ShapeError&) {
        }
    }
}

} // namespace kiln::fuzz
