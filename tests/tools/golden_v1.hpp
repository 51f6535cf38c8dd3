#pragma once
// A cache left by a Kiln of entry format 1, for the CLI tests: the version-1 golden entry of
// tests/cache/golden published into a cache directory. Needs KILN_GOLDEN_DIR.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/store.hpp"
#include "temp_dir.hpp"

#include <string>

namespace kiln::test {

/// The golden entry's key.
inline const char* const kGoldenV1Key = "00112233445566778899aabbccddeeff";

/// Publish the version-1 golden entry into the cache at @p dir; false if that failed.
inline bool store_golden_v1(const std::string& dir) {
    const auto golden = read_file(std::string(KILN_GOLDEN_DIR) + "/entry_v1.kiln");
    const auto decoded = cache::decode_entry(golden, *cache::Key::from_hex(kGoldenV1Key));
    cache::Config config;
    config.dir = dir;
    return decoded.entry && decoded.entry->format_version == 1 &&
           cache::Store(config).store(*decoded.entry);
}

} // namespace kiln::test
