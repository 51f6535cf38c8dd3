#pragma once
// The spec fuzzer's harness (fuzz_param_spec, and the replay test in tests/fuzz): the
// parameter-spec parser on every line of an input, then the front end the first line names on
// the fields that follow, with calls described by the remaining bytes (fuzz_input.hpp).

#include <cstddef>
#include <cstdint>

namespace kiln::fuzz {

/// Run one input. Returns for every input Kiln answers as documented: a result, or the
/// kiln::Error subclass that the entry point's documentation names. Anything else escapes: a
/// HarnessFailure (a broken promise such as a parse that disagrees with itself), another
/// exception, and, in a sanitizer build, memory errors and undefined behaviour.
void run_spec_input(const std::uint8_t* data, std::size_t size);

} // namespace kiln::fuzz
