#pragma once
// zstd for cache entries (entry.cpp, compression 1): one frame per block, compressed with the
// frozen dictionary of version 1 (cache/dictionary/zstd_v1.dict, built into the library), its
// content size in the frame header. The dictionary is a format-level constant: entries written
// with it must decode as long as Kiln reads them, so it is never rebuilt; new device headers get
// a new dictionary version and compression value beside it.

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// The raw-content dictionary of compression 1 (generated from cache/dictionary/zstd_v1.dict).
std::string_view zstd_dictionary_v1();

/// One zstd frame of @p input, with dictionary 1 and its content size recorded.
/// @throws std::runtime_error when zstd fails (out of memory).
std::string zstd_compress_v1(std::string_view input);

/// Decompress @p frame, which must be exactly one zstd frame (dictionary 1) that records a content
/// size of at most @p limit, into @p out (sized before anything is decompressed). False, with
/// @p out unspecified, for anything else: no frame, a missing or larger size, trailing bytes,
/// damage, a size that does not match what the frame holds.
bool zstd_decompress_v1(std::string_view frame, std::uint64_t limit, std::string& out);

/// About 3 KB that compress as a cubin does: runs copied from the dictionary (matches into it)
/// between text drawn unevenly from a small alphabet (Huffman-coded literals). A warm-up compresses
/// and decompresses it so that a first hit's decompression runs code already paged in and cached; a
/// run of one byte (an RLE block) leaves most of that code cold, and the first cubin then took
/// 2-4x its warm time (bench/RESULTS.md, "The first call at the driver's floor").
std::string zstd_warm_up_sample();

} // namespace kiln::cache::detail
