#pragma once
// The cache-entry fuzzer's harness (fuzz_cache_entry, and the replay test in tests/fuzz): the
// entry reader and verifier (decode_entry, entry_head_size, decode_entry_head) and Key::from_hex
// on arbitrary bytes, as they are and repaired so that their sizes and checksums agree.

#include <cstddef>
#include <cstdint>

namespace kiln::fuzz {

/// Run one input. The readers never throw on bad input, so nothing may escape: a HarnessFailure
/// (an accepted entry that does not re-encode to the same bytes, readers that disagree) or any
/// exception is a finding, as are memory errors and undefined behaviour in a sanitizer build.
void run_entry_input(const std::uint8_t* data, std::size_t size);

} // namespace kiln::fuzz
