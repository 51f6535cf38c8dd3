// libFuzzer target: parameter specs and the front ends' spec handling (spec_harness.hpp).
// Input format: fuzz_input.hpp; seeds in corpus/fuzz_param_spec, dictionary fuzz_param_spec.dict.

#include "spec_harness.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    kiln::fuzz::run_spec_input(data, size);
    return 0;
}
