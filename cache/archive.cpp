#include "kiln/cache/store.hpp"

#include "kiln/error.hpp"

#include "atomic_file.hpp"
#include "bytes.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "shard.hpp"
#include "store_impl.hpp"

#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

// `kiln export` / `kiln import`: a whole cache in one file, version 1. Integers little-endian.
//
//   archive      ::= magic version record* end
//   magic        ::= "KILNARC" 0x00
//   version      ::= u32                        1
//   record       ::= 0x01 key entry_size source_size entry source record_hash
//   key          ::= 16 bytes
//   entry_size   ::= u64                        at most the largest entry file
//   source_size  ::= u64                        0 when the entry has no saved source
//   entry        ::= entry_size bytes           an entry file, byte for byte (entry.cpp)
//   source       ::= source_size bytes          its `.cu`
//   record_hash  ::= u64                        XXH3-64 of key through source
//   end          ::= 0x00 record_count:u64      the number of records, against truncation
//
// Import checks each record's hash and decodes and verifies its entry against its key before
// publishing it, so nothing damaged or mislabelled enters the cache; the first bad record stops
// the import with an error.

namespace kiln::cache {

namespace {

constexpr char kArchiveMagic[8] = {'K', 'I', 'L', 'N', 'A', 'R', 'C', '\0'};
constexpr std::uint32_t kArchiveVersion = 1;
constexpr char kRecordTag = 1;
constexpr char kEndTag = 0;
constexpr std::uint64_t kMaxSourceSize = std::uint64_t{256} << 20;
constexpr std::size_t kRecordHeaderSize = 16 + 8 + 8;

[[noreturn]] void fail(const std::filesystem::path& file, const std::string& what) {
    throw Error("archive " + file.string() + ": " + what);
}

std::string read_or_empty(int dir_fd, const std::string& name, std::uint64_t max_size) {
    detail::UniqueFd fd = detail::open_at(dir_fd, name, detail::kReadFlags);
    std::string bytes;
    if (!fd || detail::read_all(fd.get(), max_size, bytes) != 0) return {};
    return bytes;
}

// Reads exactly the bytes asked for, or reports how it fell short.
class ArchiveReader {
  public:
    explicit ArchiveReader(const std::filesystem::path& file)
        : m_file(file)
        , m_fd(detail::open_file(file, O_RDONLY)) {
        struct stat st;
        if (!m_fd || ::fstat(m_fd.get(), &st) != 0) fail(file, std::strerror(errno));
        m_remaining = static_cast<std::uint64_t>(st.st_size);
    }
    /// Bytes left, by the size the file had when opened: sizes read from the file are checked
    /// against it before anything that large is allocated.
    std::uint64_t remaining() const { return m_remaining; }
    std::string take(std::uint64_t size) {
        if (size > m_remaining) fail(m_file, "truncated");
        m_remaining -= size;
        std::string bytes(static_cast<std::size_t>(size), '\0');
        std::size_t filled = 0;
        while (filled < bytes.size()) {
            const ssize_t n = ::read(m_fd.get(), bytes.data() + filled, bytes.size() - filled);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail(m_file, std::strerror(errno));
            if (n == 0) fail(m_file, "truncated");
            filled += static_cast<std::size_t>(n);
        }
        return bytes;
    }

  private:
    std::filesystem::path m_file;
    detail::UniqueFd m_fd;
    std::uint64_t m_remaining = 0;
};

} // namespace

TransferResult Store::export_to(const std::filesystem::path& file) {
    detail::AtomicFile out(file, 0644, false);
    auto check = [&](int error) {
        if (error != 0) fail(file, std::strerror(error));
    };
    check(out.error());
    std::string buffer;
    detail::ByteWriter header(buffer);
    header.raw(std::string_view(kArchiveMagic, sizeof kArchiveMagic));
    header.u32(kArchiveVersion);
    check(out.write(buffer));

    TransferResult result;
    std::uint64_t records = 0;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_impl->open_shard(shard, false);
        detail::ShardContents contents;
        if (!ref || detail::scan_shard(ref.get(), 0, contents) != 0) continue;
        for (const auto& item : contents.items) {
            if (!item.has_entry || detail::shard_of(item.key) != shard) continue;
            const std::string hex = item.key.hex();
            const std::string entry = read_or_empty(
                ref.get(), hex + std::string(detail::kEntrySuffix), detail::kMaxEntryFileSize);
            if (!decode_entry(entry, item.key).entry) {
                ++result.skipped; // damaged (or evicted meanwhile): nothing worth carrying
                continue;
            }
            const std::string source =
                item.has_source ? read_or_empty(ref.get(), hex + std::string(detail::kSourceSuffix),
                                                kMaxSourceSize)
                                : "";
            buffer.clear();
            detail::ByteWriter record(buffer);
            record.raw(std::string_view(&kRecordTag, 1));
            record.raw(std::string_view(reinterpret_cast<const char*>(item.key.bytes.data()),
                                        item.key.bytes.size()));
            record.u64(entry.size());
            record.u64(source.size());
            XXH3_state_t hash;
            XXH3_64bits_reset(&hash);
            XXH3_64bits_update(&hash, buffer.data() + 1, buffer.size() - 1);
            XXH3_64bits_update(&hash, entry.data(), entry.size());
            XXH3_64bits_update(&hash, source.data(), source.size());
            check(out.write(buffer));
            check(out.write(entry));
            check(out.write(source));
            buffer.clear();
            record.u64(XXH3_64bits_digest(&hash));
            check(out.write(buffer));
            ++records;
            ++result.entries;
            result.sources += !source.empty();
            result.bytes += entry.size() + source.size();
        }
    }
    buffer.clear();
    detail::ByteWriter end(buffer);
    end.raw(std::string_view(&kEndTag, 1));
    end.u64(records);
    check(out.write(buffer));
    check(out.commit());
    return result;
}

TransferResult Store::import_from(const std::filesystem::path& file) {
    ArchiveReader in(file);
    {
        const std::string head = in.take(sizeof kArchiveMagic + 4);
        detail::ByteReader header(head);
        if (header.raw(sizeof kArchiveMagic) !=
            std::string_view(kArchiveMagic, sizeof kArchiveMagic))
            fail(file, "not a Kiln cache archive");
        if (header.u32() != kArchiveVersion) fail(file, "an archive format this Kiln cannot read");
    }
    TransferResult result;
    for (std::uint64_t index = 0;; ++index) {
        const std::string tag = in.take(1);
        if (tag[0] == kEndTag) {
            const std::string count_bytes = in.take(8);
            if (detail::ByteReader(count_bytes).u64() != index)
                fail(file, "damaged: the record count does not match");
            return result;
        }
        if (tag[0] != kRecordTag) fail(file, "damaged: record " + std::to_string(index));
        const std::string fields = in.take(kRecordHeaderSize);
        detail::ByteReader reader(fields);
        Key key;
        std::memcpy(key.bytes.data(), reader.raw(key.bytes.size()).data(), key.bytes.size());
        const std::uint64_t entry_size = reader.u64();
        const std::uint64_t source_size = reader.u64();
        if (entry_size > detail::kMaxEntryFileSize || source_size > kMaxSourceSize ||
            entry_size + source_size > in.remaining())
            fail(file, "damaged: record " + std::to_string(index) + " has impossible sizes");
        const std::string entry = in.take(entry_size);
        const std::string source = in.take(source_size);
        const std::string hash_bytes = in.take(8);
        XXH3_state_t hash;
        XXH3_64bits_reset(&hash);
        XXH3_64bits_update(&hash, fields.data(), fields.size());
        XXH3_64bits_update(&hash, entry.data(), entry.size());
        XXH3_64bits_update(&hash, source.data(), source.size());
        if (XXH3_64bits_digest(&hash) != detail::ByteReader(hash_bytes).u64())
            fail(file, "damaged: record " + std::to_string(index) + " fails its checksum");
        const DecodeResult decoded = decode_entry(entry, key);
        if (!decoded.entry)
            fail(file, "record " + std::to_string(index) + " holds a bad entry (" +
                           to_string(decoded.error) + ")");
        if (int error = m_impl->put(key, entry))
            fail(file, "cannot publish " + key.hex() + " into " + m_impl->config.dir.string() +
                           ": " + std::strerror(error));
        if (!source.empty()) {
            if (int error = m_impl->put_source(key, source))
                fail(file,
                     "cannot publish the source of " + key.hex() + ": " + std::strerror(error));
            ++result.sources;
        }
        ++result.entries;
        result.bytes += entry.size() + source.size();
    }
}

} // namespace kiln::cache
