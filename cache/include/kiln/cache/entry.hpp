#pragma once
/// @file
/// One cache entry: a header with metadata followed by the raw payload (a cubin). The metadata
/// holds what NVRTC said, the kernels' names, the recipe that produced the entry and, for linked
/// code, its link inputs. The byte format is documented as a grammar at the top of entry.cpp, the
/// code that reads it. Encoding and decoding are pure functions over bytes; kiln::cache::Store
/// does the file work.

#include "kiln/cache/key.hpp"
#include "kiln/cache/recipe.hpp"
#include "kiln/cache/signing.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::cache {

/// Version of the entry format that Kiln writes; part of every key, so a program never looks up
/// an entry of another version (an upgrade from version 2 is one miss per kernel). Tools
/// (`kiln cache ls`, `verify`, `prune`, `show`) still decode entries from
/// kOldestEntryFormatVersion on. Version 3 added the seal (provenance and signature) and the
/// compression field.
inline constexpr std::uint32_t kEntryFormatVersion = 3;
/// The oldest entry format decode_entry() reads.
inline constexpr std::uint32_t kOldestEntryFormatVersion = 1;

/// Size of an entry's fixed header; the metadata follows it, then the payload.
inline constexpr std::size_t kEntryHeaderSize = 64;
/// Size of the seal that ends an entry of version 3 (provenance and signature), after the payload.
inline constexpr std::size_t kEntrySealSize = 128;
/// Limits that decode_entry() enforces and encode_entry() respects, so hostile sizes are rejected.
/// The largest payload: 1 GiB.
inline constexpr std::uint64_t kMaxPayloadSize = std::uint64_t{1} << 30;
/// The largest metadata block (names, log and the other fields): 64 MiB.
inline constexpr std::uint64_t kMaxMetadataSize = std::uint64_t{64} << 20;

/// What the payload is: `cubin`, a cubin for Entry::arch, loaded as is; or `ptx`, PTX text,
/// which the format allows (Kiln itself stores cubins only).
enum class PayloadKind : std::uint32_t { cubin = 1, ptx = 2 };

/// Where an entry came from, as its seal records it: `own_compile`, compiled by this user into
/// this user's private directory (the one thing a reader with trusted keys uses unsigned);
/// `imported`, anything else (a write-back from the remote tier, an import, a shared directory's
/// entries); `verified`, imported after this user's Kiln checked the signature of the key the
/// seal names (a write-back or import with trusted keys). In a private directory, which only its
/// owner writes, a `verified` entry is used while its signer stays trusted without checking the
/// signature again; anywhere else the field is ignored.
enum class Provenance : std::uint32_t { own_compile = 1, imported = 2, verified = 3 };

/// How the metadata and payload are stored (format version 3; older versions store them as they
/// are): `none`, as they are; `zstd_v1`, each a zstd frame compressed with Kiln's dictionary of
/// version 1 (built from its device headers and frozen), what encode_entry() writes by default.
/// An entry with another value is a newer Kiln's: read as a miss, never as damage.
enum class Compression : std::uint16_t { none = 0, zstd_v1 = 1 };

/// What a link input is, as the device linker takes it.
enum class LinkInputKind : std::uint32_t {
    cubin = 1,  ///< a cubin for the entry's architecture
    ptx = 2,    ///< PTX text
    ltoir = 3,  ///< NVVM IR for link-time optimization
    fatbin = 4, ///< a fat binary
    object = 5, ///< a relocatable object (`nvcc -dc`)
    library = 6 ///< a static library of objects (`.a`)
};
/// The kind's name, for messages and listings.
/// @param kind the kind.
/// @return `"cubin"`, `"ptx"`, `"ltoir"`, `"fatbin"`, `"object"` or `"library"` (a static string).
const char* to_string(LinkInputKind kind);

/// One named input of a link (relocatable device code): its bytes, or a key instead of them. The
/// compiler records the caller's link inputs by their bytes and the toolkit's device runtime,
/// named "libcudadevrt.a", by a hash of its content (kiln::cache::KeyBuilder over the file): it
/// is found again from the toolkit, not stored in every entry.
struct LinkInput {
    LinkInputKind kind = LinkInputKind::object; ///< what the linker is given
    std::string name;                           ///< e.g. "libcudadevrt.a" or "part_a.cu"
    std::string bytes;                          ///< the input itself; empty when @p key is set
    std::optional<Key> key;                     ///< what identifies it, instead of @p bytes

    /// Field by field.
    /// @param a, b the inputs to compare.
    /// @return whether kind, name, bytes and key are all equal.
    friend bool operator==(const LinkInput& a, const LinkInput& b) {
        return a.kind == b.kind && a.name == b.name && a.bytes == b.bytes && a.key == b.key;
    }
    /// Field by field.
    /// @param a, b the inputs to compare.
    /// @return whether some field differs.
    friend bool operator!=(const LinkInput& a, const LinkInput& b) { return !(a == b); }
};

/// One compiled program and what is known about it, as stored under its key.
struct Entry {
    /// The key it was compiled under; decode_entry() checks it against the file name's.
    Key key;
    /// What the payload holds.
    PayloadKind kind = PayloadKind::cubin;
    std::string payload;                                            ///< the cubin, byte for byte
    std::vector<std::pair<std::string, std::string>> lowered_names; ///< name expression -> lowered
    std::string nvrtc_version;                                      ///< e.g. "13.0.88"
    std::string arch;                                               ///< e.g. "sm_90"
    /// How long NVRTC took, in milliseconds (what a hit saved).
    double compile_ms = 0;
    std::string log; ///< NVRTC's log (warnings)
    /// The format the entry was read in (decode_entry()) or is written in (encode_entry()).
    /// Version 1 has none of the fields below.
    std::uint32_t format_version = kEntryFormatVersion;
    /// The kernels in the payload (their symbols, C++ ones mangled), recorded at compile time.
    std::vector<std::string> kernel_names;
    /// What produced the entry; nullopt when unknown (version 1, or a writer that kept none).
    std::optional<Recipe> recipe;
    /// The inputs a linked payload was linked from, in link order; empty for a plain compile.
    std::vector<LinkInput> link_inputs;
    /// Version 3: where it came from; encode_entry() writes it, decode_entry() reads it.
    Provenance provenance = Provenance::imported;
    /// Version 3: how the metadata and payload are stored; encode_entry() writes it (versions 1
    /// and 2 have no compression and ignore it), decode_entry() reads it.
    Compression compression = Compression::zstd_v1;
    /// Version 3, as read: the key the entry's signature names (not verified: verification
    /// needs the trusted keys, trust.hpp); nullopt for an unsigned entry.
    std::optional<PublicKeyBytes> signer;
};

/// Serialize an entry to its on-disk bytes, in Entry::format_version.
/// @param entry the entry.
/// @return the file's content.
/// @throws std::length_error when the payload or metadata exceed kMaxPayloadSize /
/// kMaxMetadataSize (or a string exceeds 4 GiB, or a list 2^20 items);
/// std::invalid_argument for a format version it cannot write (outside
/// kOldestEntryFormatVersion..kEntryFormatVersion, or version 1 with fields it has no room for) or
/// a link input with both bytes and a key.
std::string encode_entry(const Entry& entry);
/// encode_entry() signed with @p key (format version 3; nullptr: unsigned).
/// @param entry the entry.
/// @param key the writer's signing key, or nullptr.
/// @return the file's content.
std::string encode_entry(const Entry& entry, const SigningKey* key);

/// Why decode_entry() rejected some bytes: `truncated` (fewer bytes than the header or its sizes
/// promise), `bad_magic` (not a Kiln cache entry), `bad_version` (a version outside
/// kOldestEntryFormatVersion..kEntryFormatVersion), `bad_key` (an entry for another key than its
/// file name says), `bad_checksum` (a hash over the header, metadata or payload does not match),
/// `malformed` (sizes over the limits, bad lengths, an unknown payload kind, a bad seal),
/// `unsupported` (a compression this Kiln does not read: a newer Kiln's entry, not damage).
enum class DecodeError {
    truncated,
    bad_magic,
    bad_version,
    bad_key,
    bad_checksum,
    malformed,
    unsupported
};
/// A name for logs and `kiln cache verify`.
/// @param e the error.
/// @return its name, e.g. `"bad_checksum"` (a static string).
const char* to_string(DecodeError e);

/// What decode_entry() and decode_entry_head() found.
struct DecodeResult {
    /// The entry when the bytes verify; nullopt otherwise, with the reason in #error.
    std::optional<Entry> entry;
    /// Why the bytes were rejected; meaningless when #entry holds a value.
    DecodeError error = DecodeError::malformed;
    /// The payload's size (decompressed); set on success, also by decode_entry_head().
    std::uint64_t payload_size = 0;
    /// The payload's bytes in the file, compressed or not; set with #payload_size.
    std::uint64_t stored_payload_size = 0;
};
/// Parse and verify on-disk bytes. Never throws on bad input.
/// @param bytes the whole file.
/// @param expected the key the file name promised: an entry that holds another key is rejected.
/// @return the entry, or the reason it was rejected.
DecodeResult decode_entry(std::string_view bytes, const Key& expected);
/// How much of an entry to read out (the checks cover the whole entry either way).
enum class EntryParts {
    all,         ///< every field
    for_loading, ///< what loading and running the payload needs: no recipe, no link inputs
};

/// decode_entry() that reads out only @p parts; the payload is copied out of @p bytes.
/// @param bytes the whole file.
/// @param expected the key the file name promised.
/// @param parts what to read out: everything, or what running the payload needs.
/// @return the entry, or the reason it was rejected.
DecodeResult decode_entry(std::string_view bytes, const Key& expected, EntryParts parts);

/// decode_entry() that takes the file's bytes and keeps their buffer as the payload (the header
/// and metadata are cut off in place): a hit on an uncompressed entry copies nothing (a
/// compressed one decompresses into a buffer of its own). @p bytes is left unspecified.
/// @param bytes the whole file.
/// @param expected the key the file name promised.
/// @param parts what to read out: everything, or what running the payload needs.
/// @return the entry, or the reason it was rejected.
DecodeResult decode_entry_in_place(std::string&& bytes, const Key& expected,
                                   EntryParts parts = EntryParts::all);

/// How many leading bytes of an entry hold its header and metadata, from its first
/// kEntryHeaderSize bytes; 0 when @p header does not start an entry of this format.
/// @param header the first kEntryHeaderSize bytes of a file (fewer gives 0).
/// @return the size of the header and metadata, or 0.
std::uint64_t entry_head_size(std::string_view header);

/// decode_entry() for listings. Verifies everything but the payload checksum; Entry::payload stays
/// empty (and compressed, is not decompressed: the head records the payload's size).
/// @param head the first entry_head_size() bytes of the file.
/// @param file_size the file's size, which must be the head plus the payload.
/// @param expected the key the file name promised.
/// @return the entry without its payload, or the reason it was rejected.
DecodeResult decode_entry_head(std::string_view head, std::uint64_t file_size, const Key& expected);

} // namespace kiln::cache
