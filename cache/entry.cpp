#include "kiln/cache/entry.hpp"

#include "bytes.hpp"
#include "compression.hpp"
#include "seal.hpp"

#include <xxhash.h>
#include <zstd.h>

#include <cstring>
#include <stdexcept>

// The on-disk format of one cache entry, version 3. All integers are little-endian; the file is
// exactly 64 + metadata_size + payload_size + 128 bytes long.
//
//   entry          ::= header metadata payload seal
//   header         ::= magic version kind compression key metadata_size payload_size
//                      payload_hash head_hash     (64 bytes)
//   magic          ::= "KILNCCH" 0x00             (8 bytes, offset 0)
//   version        ::= u32                        format version, 3 (offset 8)
//   kind           ::= u16                        1 = cubin, 2 = ptx (offset 12)
//   compression    ::= u16                        (offset 14) 0 = none: metadata and payload
//                                                  as below; 1 = zstd with dictionary 1:
//                                                  stored_metadata and stored_payload instead
//                                                  (what Kiln writes); another is a newer
//                                                  Kiln's entry, read as a miss
//   key            ::= 16 bytes                   the entry's key; equals its file name (offset 16)
//   metadata_size  ::= u64                        at most 64 MiB (offset 32): the bytes stored
//   payload_size   ::= u64                        at most 1 GiB (offset 40): the bytes stored
//   payload_hash   ::= u64                        XXH3-64 of payload (offset 48), as stored
//   head_hash      ::= u64                        XXH3-64 of header bytes 0..55 followed by
//                                                  metadata (offset 56), as stored
//   metadata       ::= nvrtc_version arch compile_ms log name_count name_pair{name_count}
//                      kernel_count kernel{kernel_count} recipe_tag recipe? link_count
//                      link_input{link_count}      exactly metadata_size bytes
//   nvrtc_version  ::= string                     e.g. "13.0.88"
//   arch           ::= string                     e.g. "sm_90"
//   compile_ms     ::= u64                        IEEE 754 binary64 bits
//   log            ::= string                     NVRTC's log
//   name_count     ::= count
//   name_pair      ::= string string              name expression, lowered name
//   kernel_count   ::= count
//   kernel         ::= string                     a kernel's symbol in the payload, at compile time
//   recipe_tag     ::= u32                        0: no recipe follows, 1: a recipe follows
//   recipe         ::= flags source program_name description option_count option{option_count}
//                      header_count header{header_count} expression_count string{expression_count}
//   flags          ::= u32                        bit 0: cuda_headers, bit 1: lineinfo; no others
//   source         ::= string                     the CUDA source
//   program_name   ::= string                     NVRTC's program name (the cubin embeds it)
//   description    ::= string                     the front end's JSON, or empty
//   option_count   ::= count
//   option         ::= string                     a caller's NVRTC option, in the order given
//   header_count   ::= count
//   header         ::= string string              name, content
//   expression_count ::= count
//   link_count     ::= count
//   link_input     ::= link_kind string link_source  kind, name
//   link_kind      ::= u32                        1 cubin, 2 ptx, 3 ltoir, 4 fatbin, 5 object,
//                                                  6 library
//   link_source    ::= 1 string | 2 16 bytes      (u32 tag) the input's bytes, or a key that
//                                                  identifies them (libcudadevrt.a: its content)
//   count          ::= u32                        at most 2^20
//   string         ::= u32 length, then length bytes
//   payload        ::= payload_size bytes         the raw cubin
//   seal           ::= 128 bytes                  provenance and signature (seal.hpp)
//
// Compression 1 stores, in place of metadata and payload (metadata_size and payload_size then
// count these stored bytes; the hashes and the seal's signature cover them, so damage and forgery
// are caught before anything is decompressed):
//
//   stored_metadata ::= content_size frame frame  metadata_size bytes
//   content_size   ::= u64                        the payload's decompressed size, at most 1 GiB
//                                                  (a listing reads the head only)
//   frame          ::= one zstd frame             compressed with dictionary 1, recording its
//                                                  content size, no checksum; the first holds
//                                                  metadata from nvrtc_version to kernel{} (what
//                                                  a load reads), the second the rest, from
//                                                  recipe_tag on (64 MiB in all)
//   stored_payload ::= frame                      payload_size bytes; holds payload, exactly
//                                                  content_size bytes
//
// Dictionary 1 is cache/dictionary/zstd_v1.dict (Kiln's device headers of 2026-11-29, as raw
// content), built into Kiln and frozen: new headers would get a new dictionary and compression
// value. A reader learns each frame's size from its header and refuses one over the limit before
// allocating anything. Compressed bytes are not canonical (another zstd may compress otherwise):
// what is canonical is what they decompress to.
//
// Version 2 is the same without the seal (the file ends with the payload), with kind a u32 and
// no compression field. Version 1 is version 2 but for its metadata, which ends after the name
// pairs: it has no kernel names, recipe or link inputs. Keys name the format version, so a program
// never looks up a version-1 entry; tools still list, verify, show and prune them. The format is
// canonical: every accepted entry encodes back to the same bytes, so a flag bit or tag with no
// meaning is rejected.
//
// The recipe sits in the metadata, not beside the payload, so that a listing reads everything but
// the payload in one go; sources and headers are usually smaller than the cubins they produce,
// and compressed, Kiln's own headers (the dictionary's content) cost next to nothing.
//
// The hashes together cover every byte, so a flipped bit anywhere is detected: in magic or
// version directly, elsewhere in the header or metadata by head_hash, in the payload by
// payload_hash, in the seal by its own hash. The seal's signature covers every byte before it. A
// reader checks magic and version first (their place never changes between versions), then sizes,
// head_hash, key, compression, payload_hash and the seal, and only then decompresses and reads
// the metadata and payload.

namespace kiln::cache {

namespace {

constexpr char kEntryMagic[8] = {'K', 'I', 'L', 'N', 'C', 'C', 'H', '\0'};
constexpr std::size_t kHashedHeaderSize = 56; // header bytes before head_hash
constexpr std::uint32_t kMaxCount = 1u << 20;
constexpr std::uint64_t kMaxString = 0xffffffffu;
constexpr std::uint32_t kCudaHeadersFlag = 1u << 0;
constexpr std::uint32_t kLineinfoFlag = 1u << 1;
constexpr std::uint32_t kLinkBytes = 1;
constexpr std::uint32_t kLinkKey = 2;

struct Header {
    std::uint32_t version = 0;
    std::uint32_t kind = 0;
    std::uint32_t compression = 0;
    Key key;
    std::uint64_t metadata_size = 0;
    std::uint64_t payload_size = 0;
    std::uint64_t payload_hash = 0;
    std::uint64_t head_hash = 0;
};

std::uint64_t hash_head(std::string_view header, std::string_view metadata) {
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, header.data(), kHashedHeaderSize);
    XXH3_64bits_update(&state, metadata.data(), metadata.size());
    return XXH3_64bits_digest(&state);
}

std::uint64_t hash_payload(std::string_view payload) {
    return XXH3_64bits(payload.data(), payload.size());
}

// Writes strings and counts, refusing what the reader would refuse.
class MetadataWriter {
  public:
    explicit MetadataWriter(std::string& out)
        : m_out(out) {}
    void string(std::string_view text) {
        if (text.size() > kMaxString) throw std::length_error("cache entry: string over 4 GiB");
        m_out.string(text);
    }
    void count(std::size_t n) {
        if (n > kMaxCount) throw std::length_error("cache entry: a list over 2^20 items");
        m_out.u32(static_cast<std::uint32_t>(n));
    }
    void strings(const std::vector<std::string>& texts) {
        count(texts.size());
        for (const auto& text : texts)
            string(text);
    }
    void pairs(const std::vector<std::pair<std::string, std::string>>& items) {
        count(items.size());
        for (const auto& [first, second] : items) {
            string(first);
            string(second);
        }
    }
    detail::ByteWriter& raw() { return m_out; }

  private:
    detail::ByteWriter m_out;
};

void encode_recipe(const Recipe& recipe, MetadataWriter& out) {
    out.raw().u32((recipe.cuda_headers ? kCudaHeadersFlag : 0) |
                  (recipe.lineinfo ? kLineinfoFlag : 0));
    out.string(recipe.source);
    out.string(recipe.program_name);
    out.string(recipe.description);
    out.strings(recipe.options);
    out.pairs(recipe.headers);
    out.strings(recipe.name_expressions);
}

void encode_link_input(const LinkInput& input, MetadataWriter& out) {
    const auto kind = static_cast<std::uint32_t>(input.kind);
    if (kind < static_cast<std::uint32_t>(LinkInputKind::cubin) ||
        kind > static_cast<std::uint32_t>(LinkInputKind::library))
        throw std::invalid_argument("cache entry: unknown link input kind");
    if (input.key && !input.bytes.empty())
        throw std::invalid_argument("cache entry: link input '" + input.name +
                                    "' has both bytes and a key");
    out.raw().u32(kind);
    out.string(input.name);
    if (input.key) {
        out.raw().u32(kLinkKey);
        out.raw().raw(std::string_view(reinterpret_cast<const char*>(input.key->bytes.data()),
                                       input.key->bytes.size()));
    } else {
        out.raw().u32(kLinkBytes);
        out.string(input.bytes);
    }
}

// The metadata, and in @p loading_size how many of its leading bytes hold the fields a load
// reads (nvrtc_version to kernel names).
std::string encode_metadata(const Entry& entry, std::size_t& loading_size) {
    if (entry.format_version < kOldestEntryFormatVersion ||
        entry.format_version > kEntryFormatVersion)
        throw std::invalid_argument("cache entry: cannot write format version " +
                                    std::to_string(entry.format_version));
    const bool v1 = entry.format_version == 1;
    if (v1 && (!entry.kernel_names.empty() || entry.recipe || !entry.link_inputs.empty()))
        throw std::invalid_argument(
            "cache entry: format version 1 has no kernel names, recipe or link inputs");
    std::string metadata;
    MetadataWriter out(metadata);
    out.string(entry.nvrtc_version);
    out.string(entry.arch);
    out.raw().f64(entry.compile_ms);
    out.string(entry.log);
    out.pairs(entry.lowered_names);
    loading_size = metadata.size();
    if (!v1) {
        out.strings(entry.kernel_names);
        loading_size = metadata.size();
        out.raw().u32(entry.recipe ? 1 : 0);
        if (entry.recipe) encode_recipe(*entry.recipe, out);
        out.count(entry.link_inputs.size());
        for (const auto& input : entry.link_inputs)
            encode_link_input(input, out);
    }
    if (metadata.size() > kMaxMetadataSize)
        throw std::length_error("cache entry: metadata over the size limit");
    return metadata;
}

// Reads what MetadataWriter wrote; any failure clears ok() for good.
class MetadataReader {
  public:
    explicit MetadataReader(std::string_view metadata)
        : m_in(metadata) {}
    bool ok() const { return m_ok && m_in.ok(); }
    std::size_t remaining() const { return m_in.remaining(); }
    detail::ByteReader& raw() { return m_in; }
    std::string string() { return m_in.string(); }
    // A count of items each at least @p min_item_size bytes long: bounded by what is really
    // there, so a hostile count reserves nothing.
    std::uint32_t count(std::size_t min_item_size) {
        const std::uint32_t n = m_in.u32();
        if (!m_in.ok() || n > kMaxCount || n > m_in.remaining() / min_item_size) {
            m_ok = false;
            return 0;
        }
        return n;
    }
    void strings(std::vector<std::string>& out) {
        const std::uint32_t n = count(4);
        out.reserve(n);
        for (std::uint32_t i = 0; i < n && ok(); ++i)
            out.push_back(string());
    }
    void pairs(std::vector<std::pair<std::string, std::string>>& out) {
        const std::uint32_t n = count(8);
        out.reserve(n);
        for (std::uint32_t i = 0; i < n && ok(); ++i) {
            std::string first = string();
            std::string second = string();
            out.emplace_back(std::move(first), std::move(second));
        }
    }
    void fail() { m_ok = false; }

  private:
    detail::ByteReader m_in;
    bool m_ok = true;
};

Recipe decode_recipe(MetadataReader& in) {
    Recipe recipe;
    const std::uint32_t flags = in.raw().u32();
    if (flags & ~(kCudaHeadersFlag | kLineinfoFlag)) in.fail();
    recipe.cuda_headers = (flags & kCudaHeadersFlag) != 0;
    recipe.lineinfo = (flags & kLineinfoFlag) != 0;
    recipe.source = in.string();
    recipe.program_name = in.string();
    recipe.description = in.string();
    in.strings(recipe.options);
    in.pairs(recipe.headers);
    in.strings(recipe.name_expressions);
    return recipe;
}

void decode_link_inputs(MetadataReader& in, std::vector<LinkInput>& out) {
    const std::uint32_t n = in.count(16); // kind, name length, tag and a length or half a key
    out.reserve(n);
    for (std::uint32_t i = 0; i < n && in.ok(); ++i) {
        LinkInput input;
        const std::uint32_t kind = in.raw().u32();
        if (kind < static_cast<std::uint32_t>(LinkInputKind::cubin) ||
            kind > static_cast<std::uint32_t>(LinkInputKind::library))
            in.fail();
        input.kind = static_cast<LinkInputKind>(kind);
        input.name = in.string();
        const std::uint32_t tag = in.raw().u32();
        if (tag == kLinkBytes) {
            input.bytes = in.string();
        } else if (tag == kLinkKey) {
            Key key;
            const std::string_view bytes = in.raw().raw(key.bytes.size());
            if (bytes.size() == key.bytes.size())
                std::memcpy(key.bytes.data(), bytes.data(), bytes.size());
            input.key = key;
        } else {
            in.fail();
        }
        out.push_back(std::move(input));
    }
}

// nvrtc_version to kernel names: what a load reads.
void decode_loading_fields(MetadataReader& in, std::uint32_t version, Entry& entry) {
    entry.format_version = version;
    entry.nvrtc_version = in.string();
    entry.arch = in.string();
    entry.compile_ms = in.raw().f64();
    entry.log = in.string();
    in.pairs(entry.lowered_names);
    if (version >= 2) in.strings(entry.kernel_names);
}

// recipe_tag to the link inputs (version 2 on).
void decode_other_fields(MetadataReader& in, Entry& entry) {
    const std::uint32_t recipe_tag = in.raw().u32();
    if (recipe_tag > 1) in.fail();
    if (recipe_tag == 1 && in.ok()) entry.recipe = decode_recipe(in);
    decode_link_inputs(in, entry.link_inputs);
}

bool decode_metadata(std::string_view metadata, std::uint32_t version, Entry& entry,
                     EntryParts parts) {
    MetadataReader in(metadata);
    decode_loading_fields(in, version, entry);
    if (version >= 2) {
        // What follows (recipe, link inputs: the source and headers, tens of KB) is verified by
        // the head hash already; a load that only runs the payload need not copy it out.
        if (parts == EntryParts::for_loading) return in.ok();
        decode_other_fields(in, entry);
    }
    return in.ok() && in.remaining() == 0;
}

// Compression 1's stored metadata after content_size: two frames, the fields a load reads and the
// others, each exactly its fields; a load decompresses only the first.
bool decode_compressed_metadata(std::string_view frames, std::uint32_t version, Entry& entry,
                                EntryParts parts) {
    const std::size_t first = ZSTD_findFrameCompressedSize(frames.data(), frames.size());
    if (ZSTD_isError(first) || first >= frames.size()) return false;
    std::string loading, other;
    if (!detail::zstd_decompress_v1(frames.substr(0, first), kMaxMetadataSize, loading))
        return false;
    MetadataReader in(loading);
    decode_loading_fields(in, version, entry);
    if (!in.ok() || in.remaining() != 0) return false;
    if (parts == EntryParts::for_loading) return true;
    if (!detail::zstd_decompress_v1(frames.substr(first), kMaxMetadataSize - loading.size(), other))
        return false;
    MetadataReader rest(other);
    decode_other_fields(rest, entry);
    return rest.ok() && rest.remaining() == 0;
}

// Magic, version and the fixed fields; nothing about the rest of the file yet.
std::optional<DecodeError> read_header(std::string_view bytes, Header& header) {
    if (bytes.size() >= sizeof kEntryMagic &&
        std::memcmp(bytes.data(), kEntryMagic, sizeof kEntryMagic) != 0)
        return DecodeError::bad_magic;
    detail::ByteReader in(bytes);
    in.raw(sizeof kEntryMagic);
    header.version = in.u32();
    if (in.ok() &&
        (header.version < kOldestEntryFormatVersion || header.version > kEntryFormatVersion))
        return DecodeError::bad_version;
    if (bytes.size() < kEntryHeaderSize) return DecodeError::truncated;
    header.kind = in.u32();
    if (header.version >= 3) {
        header.compression = header.kind >> 16;
        header.kind &= 0xffffu;
    }
    std::string_view key = in.raw(header.key.bytes.size());
    std::memcpy(header.key.bytes.data(), key.data(), key.size());
    header.metadata_size = in.u64();
    header.payload_size = in.u64();
    header.payload_hash = in.u64();
    header.head_hash = in.u64();
    if (header.metadata_size > kMaxMetadataSize || header.payload_size > kMaxPayloadSize)
        return DecodeError::malformed;
    return std::nullopt;
}

// With @p owned (whose bytes @p bytes views), the payload is moved out of it: no copy.
DecodeResult decode(std::string_view bytes, std::uint64_t file_size, const Key& expected,
                    bool with_payload, std::string* owned = nullptr,
                    EntryParts parts = EntryParts::all) {
    DecodeResult result;
    Header header;
    if (auto error = read_header(bytes, header)) {
        result.error = *error;
        return result;
    }
    const std::uint64_t head_size = kEntryHeaderSize + header.metadata_size;
    const std::uint64_t seal_size = header.version >= 3 ? detail::kSealSize : 0;
    const std::uint64_t total = head_size + header.payload_size + seal_size;
    if (file_size < total || bytes.size() < head_size) {
        result.error = DecodeError::truncated;
        return result;
    }
    if (file_size > total) {
        result.error = DecodeError::malformed;
        return result;
    }
    const std::string_view metadata =
        bytes.substr(kEntryHeaderSize, static_cast<std::size_t>(header.metadata_size));
    if (hash_head(bytes, metadata) != header.head_hash) {
        result.error = DecodeError::bad_checksum;
        return result;
    }
    if (header.key != expected) {
        result.error = DecodeError::bad_key;
        return result;
    }
    const bool zstd = header.compression == static_cast<std::uint32_t>(Compression::zstd_v1);
    if (header.compression != static_cast<std::uint32_t>(Compression::none) && !zstd) {
        result.error = DecodeError::unsupported;
        return result;
    }
    Entry entry;
    entry.key = header.key;
    entry.compression = static_cast<Compression>(header.compression);
    // Every hash before any decompression.
    std::string_view payload;
    if (with_payload) {
        payload = bytes.substr(static_cast<std::size_t>(head_size),
                               static_cast<std::size_t>(header.payload_size));
        if (hash_payload(payload) != header.payload_hash) {
            result.error = DecodeError::bad_checksum;
            return result;
        }
        if (seal_size) {
            const auto seal = detail::read_seal(bytes, detail::SealDomain::entry);
            if (!seal) {
                result.error = DecodeError::malformed;
                return result;
            }
            entry.provenance = seal->provenance;
            if (seal->is_signed) entry.signer = seal->signer;
        }
    }
    if (header.kind != static_cast<std::uint32_t>(PayloadKind::cubin) &&
        header.kind != static_cast<std::uint32_t>(PayloadKind::ptx)) {
        result.error = DecodeError::malformed;
        return result;
    }
    entry.kind = static_cast<PayloadKind>(header.kind);
    std::uint64_t payload_size = header.payload_size;
    bool metadata_ok = false;
    if (zstd) {
        detail::ByteReader in(metadata);
        payload_size = in.u64();
        metadata_ok = in.ok() && payload_size <= kMaxPayloadSize &&
                      decode_compressed_metadata(metadata.substr(8), header.version, entry, parts);
    } else {
        metadata_ok = decode_metadata(metadata, header.version, entry, parts);
    }
    if (!metadata_ok) {
        result.error = DecodeError::malformed;
        return result;
    }
    if (with_payload) {
        if (zstd) {
            if (!detail::zstd_decompress_v1(payload, payload_size, entry.payload) ||
                entry.payload.size() != payload_size) {
                result.error = DecodeError::malformed;
                return result;
            }
        } else if (owned) {
            owned->resize(static_cast<std::size_t>(head_size + header.payload_size));
            owned->erase(0, static_cast<std::size_t>(head_size));
            entry.payload = std::move(*owned);
        } else {
            entry.payload = std::string(payload);
        }
    }
    result.payload_size = payload_size;
    result.stored_payload_size = header.payload_size;
    result.entry = std::move(entry);
    return result;
}

} // namespace

std::string encode_entry(const Entry& entry) {
    return encode_entry(entry, nullptr);
}

std::string encode_entry(const Entry& entry, const SigningKey* key) {
    if (entry.payload.size() > kMaxPayloadSize)
        throw std::length_error("cache entry: payload over the size limit");
    std::size_t loading_size = 0;
    std::string metadata = encode_metadata(entry, loading_size);
    std::string bytes;
    const bool sealed = entry.format_version >= 3;
    if (key && !sealed)
        throw std::invalid_argument("cache entry: format version " +
                                    std::to_string(entry.format_version) + " cannot be signed");
    if (sealed && entry.compression != Compression::none &&
        entry.compression != Compression::zstd_v1)
        throw std::invalid_argument("cache entry: unknown compression");
    // Versions 1 and 2 have no compression field.
    Compression compression = sealed ? entry.compression : Compression::none;
    std::string_view payload = entry.payload;
    std::string stored_payload;
    if (compression == Compression::zstd_v1) {
        std::string stored_metadata;
        detail::ByteWriter(stored_metadata).u64(entry.payload.size());
        stored_metadata +=
            detail::zstd_compress_v1(std::string_view(metadata).substr(0, loading_size));
        stored_metadata +=
            detail::zstd_compress_v1(std::string_view(metadata).substr(loading_size));
        stored_payload = detail::zstd_compress_v1(entry.payload);
        // Incompressible data near a limit stays as it is.
        if (stored_metadata.size() > kMaxMetadataSize || stored_payload.size() > kMaxPayloadSize) {
            compression = Compression::none;
        } else {
            metadata = std::move(stored_metadata);
            payload = stored_payload;
        }
    }
    bytes.reserve(kEntryHeaderSize + metadata.size() + payload.size() +
                  (sealed ? detail::kSealSize : 0));
    detail::ByteWriter out(bytes);
    out.raw(std::string_view(kEntryMagic, sizeof kEntryMagic));
    out.u32(entry.format_version);
    // Version 3: kind in the low half, compression in the high half.
    out.u32(static_cast<std::uint32_t>(entry.kind) | static_cast<std::uint32_t>(compression) << 16);
    out.raw(std::string_view(reinterpret_cast<const char*>(entry.key.bytes.data()),
                             entry.key.bytes.size()));
    out.u64(metadata.size());
    out.u64(payload.size());
    out.u64(hash_payload(payload));
    out.u64(hash_head(bytes, metadata));
    out.raw(metadata);
    out.raw(payload);
    if (sealed) detail::append_seal(bytes, detail::SealDomain::entry, entry.provenance, key);
    return bytes;
}

const char* to_string(LinkInputKind kind) {
    switch (kind) {
    case LinkInputKind::cubin:
        return "cubin";
    case LinkInputKind::ptx:
        return "ptx";
    case LinkInputKind::ltoir:
        return "ltoir";
    case LinkInputKind::fatbin:
        return "fatbin";
    case LinkInputKind::object:
        return "object";
    case LinkInputKind::library:
        return "library";
    }
    return "unknown";
}

const char* to_string(DecodeError e) {
    switch (e) {
    case DecodeError::truncated:
        return "truncated";
    case DecodeError::bad_magic:
        return "not a Kiln cache entry (wrong magic)";
    case DecodeError::bad_version:
        return "an entry format version this Kiln does not read";
    case DecodeError::bad_key:
        return "holds another key than its file name";
    case DecodeError::bad_checksum:
        return "checksum mismatch";
    case DecodeError::malformed:
        return "malformed";
    case DecodeError::unsupported:
        return "a compression this Kiln does not read (written by a newer Kiln)";
    }
    return "malformed";
}

DecodeResult decode_entry(std::string_view bytes, const Key& expected) {
    return decode(bytes, bytes.size(), expected, true);
}

DecodeResult decode_entry(std::string_view bytes, const Key& expected, EntryParts parts) {
    return decode(bytes, bytes.size(), expected, true, nullptr, parts);
}

DecodeResult decode_entry_in_place(std::string&& bytes, const Key& expected, EntryParts parts) {
    const std::string_view view = bytes;
    return decode(view, view.size(), expected, true, &bytes, parts);
}

std::uint64_t entry_head_size(std::string_view header) {
    Header parsed;
    if (read_header(header, parsed)) return 0;
    return kEntryHeaderSize + parsed.metadata_size;
}

DecodeResult decode_entry_head(std::string_view head, std::uint64_t file_size,
                               const Key& expected) {
    return decode(head, file_size, expected, false);
}

} // namespace kiln::cache
