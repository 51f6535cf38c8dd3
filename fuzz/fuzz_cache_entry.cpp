// libFuzzer target: the cache entry reader and verifier (entry_harness.hpp). Seeds in
// corpus/fuzz_cache_entry, among them tests/cache/golden/entry_v1.kiln and entry_v2.kiln.

#include "entry_harness.hpp"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    kiln::fuzz::run_entry_input(data, size);
    return 0;
}
