#include "kiln/cache/local_store.hpp"

#include "kiln/error.hpp"

#include "bytes.hpp"
#include "seal.hpp"
#include "trust.hpp"

#include "atomic_file.hpp"
#include "directory.hpp"
#include "fs.hpp"
#include "layout.hpp"
#include "shard.hpp"

#include <xxhash.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

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
//   end          ::= 0x00 record_count:u64      the number of records, against truncation;
//                                               nothing may follow it
//
// Import is all or nothing. It first reads the whole archive and checks every record's hash,
// decodes and verifies every entry against its key, refuses a key given twice and checks the
// record count; a damaged archive publishes nothing. Only then does it publish, and when that
// fails part-way (a full disk, an unusable shard) it removes what it had published.
//
// What an archive is trusted for: the hashes and the entry checks catch damage and mislabelling,
// not intent. Keys are hashes of the source and options, so whoever made an archive can place any
// cubin under any key, and a program that later compiles that kernel runs their code. Import only
// archives you trust as much as the code you run, or check them: with an EntryCheck
// (`kiln import --verify`: each entry's recipe compiled again, its key and cubin compared), every
// entry must pass before anything is published, and the entries published are the bytes that
// passed, held in memory from the check on.

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
        if (!m_fd || ::fstat(m_fd.get(), &st) != 0)
            fail(file, std::string("cannot read it (") + std::strerror(errno) + ")");
        if (!S_ISREG(st.st_mode)) fail(file, "not a regular file");
        m_remaining = static_cast<std::uint64_t>(st.st_size);
    }
    /// Bytes left, by the size the file had when opened: sizes read from the file are checked
    /// against it before anything that large is allocated.
    std::uint64_t remaining() const { return m_remaining; }
    /// Where the next take() starts.
    std::uint64_t offset() const { return m_offset; }
    int fd() const { return m_fd.get(); }
    std::string take(std::uint64_t size) {
        if (size > m_remaining) damaged("truncated");
        std::string bytes;
        if (int error =
                detail::read_at(m_fd.get(), m_offset, static_cast<std::size_t>(size), bytes))
            damaged(error == EIO ? "truncated" : std::strerror(error));
        m_remaining -= size;
        m_offset += size;
        return bytes;
    }
    [[noreturn]] void damaged(const std::string& what) const {
        fail(m_file, what + "; nothing was imported (make it again with `kiln export`)");
    }

  private:
    std::filesystem::path m_file;
    detail::UniqueFd m_fd;
    std::uint64_t m_remaining = 0;
    std::uint64_t m_offset = 0;
};

// One record, read and checked.
struct Record {
    Key key;
    std::string entry, source;
    std::uint64_t hash = 0;
};

// Where a validated record lies in the archive, to read it again for publishing.
struct RecordSpan {
    Key key;
    std::uint64_t offset = 0; // of the key, after the tag
    std::uint64_t entry_size = 0, source_size = 0;
    std::uint64_t hash = 0;
    // Under an EntryCheck, the bytes that passed it: published as they are, never read again, so
    // what is published is what was checked even if the file changes meanwhile.
    std::optional<std::string> checked_entry, checked_source;
};

std::uint64_t record_hash(std::string_view fields, std::string_view entry,
                          std::string_view source) {
    XXH3_state_t hash;
    XXH3_64bits_reset(&hash);
    XXH3_64bits_update(&hash, fields.data(), fields.size());
    XXH3_64bits_update(&hash, entry.data(), entry.size());
    XXH3_64bits_update(&hash, source.data(), source.size());
    return XXH3_64bits_digest(&hash);
}

// The record after the tag at the reader's position; @p index names it in messages.
Record read_record(ArchiveReader& in, std::uint64_t index) {
    const std::string where = "record " + std::to_string(index);
    const std::string fields = in.take(kRecordHeaderSize);
    detail::ByteReader reader(fields);
    Record record;
    std::memcpy(record.key.bytes.data(), reader.raw(record.key.bytes.size()).data(),
                record.key.bytes.size());
    const std::uint64_t entry_size = reader.u64();
    const std::uint64_t source_size = reader.u64();
    if (entry_size > detail::kMaxEntryFileSize || source_size > kMaxSourceSize ||
        entry_size + source_size > in.remaining())
        in.damaged(where + " has impossible sizes (the archive is truncated or damaged)");
    record.entry = in.take(entry_size);
    record.source = in.take(source_size);
    record.hash = detail::ByteReader(in.take(8)).u64();
    if (record_hash(fields, record.entry, record.source) != record.hash)
        in.damaged(where + " fails its checksum");
    const DecodeResult decoded = decode_entry(record.entry, record.key);
    if (!decoded.entry)
        in.damaged(where + " holds a bad entry for " + record.key.hex() + " (" +
                   to_string(decoded.error) + ")");
    return record;
}

// Why @p check (with the archive's own rule: a saved source is the recipe's) refuses the entry
// of @p span, or "" when it passes.
std::string check_span(const RecordSpan& span, const EntryCheck& check) {
    const DecodeResult decoded = decode_entry(*span.checked_entry, span.key);
    std::string why = check(*decoded.entry);
    if (why.empty() && !span.checked_source->empty() && decoded.entry->recipe &&
        *span.checked_source != decoded.entry->recipe->source)
        why = "its saved source is not the source its recipe holds";
    return why;
}

// Every entry through @p check, on up to @p jobs threads; the refusals in archive order.
std::vector<std::string> check_all(const std::vector<RecordSpan>& spans, const EntryCheck& check,
                                   unsigned jobs) {
    std::vector<std::string> why(spans.size());
    std::atomic<std::size_t> next{0};
    std::exception_ptr failure;
    std::mutex failure_mutex;
    auto work = [&] {
        for (std::size_t i; (i = next++) < spans.size();) {
            try {
                why[i] = check_span(spans[i], check);
            } catch (...) {
                std::lock_guard<std::mutex> lock(failure_mutex);
                if (!failure) failure = std::current_exception();
            }
        }
    };
    const std::size_t workers = std::max<std::size_t>(1, std::min<std::size_t>(jobs, spans.size()));
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < workers; ++t)
        threads.emplace_back(work);
    work();
    for (auto& thread : threads)
        thread.join();
    if (failure) std::rethrow_exception(failure);
    std::vector<std::string> refused;
    for (std::size_t i = 0; i < spans.size(); ++i)
        if (!why[i].empty()) refused.push_back(spans[i].key.hex() + ": " + why[i]);
    return refused;
}

// Reads and checks the whole archive, keeping where each record is but not its bytes: an
// archive may be far larger than memory, and re-reading a record costs less than holding it.
// With @p keep, each record's entry and source are kept in its span too (for a check).
std::vector<RecordSpan> validate(ArchiveReader& in, bool keep) {
    {
        const std::string head = in.take(sizeof kArchiveMagic + 4);
        detail::ByteReader header(head);
        if (header.raw(sizeof kArchiveMagic) !=
            std::string_view(kArchiveMagic, sizeof kArchiveMagic))
            in.damaged("not a Kiln cache archive");
        if (header.u32() != kArchiveVersion) in.damaged("an archive format this Kiln cannot read");
    }
    std::vector<RecordSpan> spans;
    std::unordered_map<Key, std::uint64_t, KeyHash> seen;
    for (std::uint64_t index = 0;; ++index) {
        const std::string tag = in.take(1);
        if (tag[0] == kEndTag) {
            if (detail::ByteReader(in.take(8)).u64() != index)
                in.damaged("the record count does not match (" + std::to_string(index) +
                           " records read)");
            if (in.remaining() != 0) in.damaged("data follows the end record");
            return spans;
        }
        if (tag[0] != kRecordTag) in.damaged("record " + std::to_string(index) + " has no tag");
        RecordSpan span;
        span.offset = in.offset();
        Record record = read_record(in, index);
        if (auto [it, fresh] = seen.emplace(record.key, index); !fresh)
            in.damaged("records " + std::to_string(it->second) + " and " + std::to_string(index) +
                       " have the same key " + record.key.hex());
        span.key = record.key;
        span.entry_size = record.entry.size();
        span.source_size = record.source.size();
        span.hash = record.hash;
        if (keep) {
            span.checked_entry = std::move(record.entry);
            span.checked_source = std::move(record.source);
        }
        spans.push_back(std::move(span));
    }
}

// A file this import published, to remove it again if a later one fails.
struct Published {
    Key key;
    std::string_view suffix;
    dev_t device = 0;
    ino_t inode = 0;
};

} // namespace

TransferResult LocalStore::export_to(const std::filesystem::path& file) {
    // Only a new or regular file is replaced (by a rename): a FIFO, a device or a directory at
    // that name would silently become a regular file. `kiln export -` writes to a stream.
    struct stat st {};
    if (::lstat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        fail(file, "it exists and is not a regular file; an archive goes to a new or regular file "
                   "(or to standard output: `kiln export -`)");
    detail::AtomicFile out(file, 0644, false);
    if (int error = out.error()) fail(file, std::strerror(error));
    TransferResult result =
        export_records(file, [&](std::string_view bytes) { return out.write(bytes); });
    if (int error = out.commit()) fail(file, std::strerror(error));
    return result;
}

TransferResult LocalStore::export_to(int fd) {
    const std::filesystem::path name = "standard output";
    return export_records(name, [fd](std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::write(fd, bytes.data(), bytes.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return n < 0 ? errno : EIO;
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return 0;
    });
}

TransferResult LocalStore::export_records(const std::filesystem::path& file,
                                          const std::function<int(std::string_view)>& write_bytes) {
    auto check = [&](int error) {
        if (error != 0) fail(file, std::strerror(error));
    };
    std::string buffer;
    detail::ByteWriter header(buffer);
    header.raw(std::string_view(kArchiveMagic, sizeof kArchiveMagic));
    header.u32(kArchiveVersion);
    check(write_bytes(buffer));

    TransferResult result;
    std::uint64_t records = 0;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = m_directory->open_shard(shard, false);
        detail::ShardContents contents;
        if (!ref || detail::scan_shard(ref.get(), 0, contents) != 0) continue;
        for (const auto& item : contents.items) {
            if (!item.has_entry || detail::shard_of(item.key) != shard) continue;
            const std::string hex = item.key.hex();
            std::string entry = read_or_empty(ref.get(), hex + std::string(detail::kEntrySuffix),
                                              detail::kMaxEntryFileSize);
            if (!decode_entry(entry, item.key).entry) {
                ++result.skipped; // damaged (or evicted meanwhile): nothing worth carrying
                continue;
            }
            // The exporter vouches for what it compiled itself into its private directory, and
            // for nothing else: an entry it took from elsewhere keeps the seal it came with.
            if (const SigningKey* key = m_directory->config().signing_key.get();
                key && !m_directory->config().shared)
                if (auto seal = detail::read_seal(entry, detail::SealDomain::entry);
                    seal && seal->provenance == Provenance::own_compile &&
                    !(seal->is_signed && seal->signer == key->public_key().bytes)) {
                    detail::reseal(entry, detail::SealDomain::entry, *key);
                    ++result.signed_now;
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
            check(write_bytes(buffer));
            check(write_bytes(entry));
            check(write_bytes(source));
            buffer.clear();
            record.u64(XXH3_64bits_digest(&hash));
            check(write_bytes(buffer));
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
    check(write_bytes(buffer));
    return result;
}

TransferResult LocalStore::import_from(const std::filesystem::path& file, const EntryCheck& check,
                                       unsigned check_jobs,
                                       const std::function<void(std::size_t)>& checking) {
    ArchiveReader in(file);
    std::vector<RecordSpan> spans = validate(in, static_cast<bool>(check));
    if (check && checking) checking(spans.size());
    const std::vector<std::string> refused =
        check ? check_all(spans, check, check_jobs) : std::vector<std::string>();
    if (!refused.empty()) {
        constexpr std::size_t kShown = 10;
        std::string list;
        for (std::size_t i = 0; i < refused.size() && i < kShown; ++i)
            list += "\n  " + refused[i];
        if (refused.size() > kShown)
            list += "\n  ... and " + std::to_string(refused.size() - kShown) + " more";
        fail(file, std::to_string(refused.size()) + " of " + std::to_string(spans.size()) +
                       " entries fail verification, so nothing was imported:" + list);
    }

    TransferResult result;
    std::vector<Published> published;
    // The file as it is now, so the rollback never removes one another writer put there since.
    auto remember = [&](const Key& key, std::string_view suffix) {
        auto ref = m_directory->open_shard(detail::shard_of(key), false);
        struct stat st;
        const std::string name = key.hex() + std::string(suffix);
        if (ref && ::fstatat(ref.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
            published.push_back({key, suffix, st.st_dev, st.st_ino});
    };
    auto exists = [&](const Key& key, std::string_view suffix) {
        auto ref = m_directory->open_shard(detail::shard_of(key), false);
        struct stat st;
        const std::string name = key.hex() + std::string(suffix);
        return ref && ::fstatat(ref.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
               S_ISREG(st.st_mode);
    };
    // Removes what this import published and says so in the error.
    auto roll_back = [&](const std::string& what) {
        std::uint64_t entries = 0, kept = 0;
        for (auto it = published.rbegin(); it != published.rend(); ++it) {
            const bool is_entry = it->suffix == detail::kEntrySuffix;
            entries += is_entry;
            auto ref = m_directory->open_shard(detail::shard_of(it->key), false);
            const std::string name = it->key.hex() + std::string(it->suffix);
            struct stat st;
            if (!ref || ::fstatat(ref.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
                st.st_dev != it->device || st.st_ino != it->inode)
                continue; // evicted or replaced meanwhile: no longer this import's
            if (::unlinkat(ref.get(), name.c_str(), 0) != 0) {
                kept += is_entry;
                continue;
            }
            detail::Counters delta;
            delta.files = is_entry ? -1 : 0;
            delta.bytes = -static_cast<std::int64_t>(st.st_size);
            m_directory->count(ref, delta);
        }
        std::string message = what + "; ";
        if (entries == 0)
            message += "nothing had been imported yet";
        else if (kept == 0)
            message += "the " + std::to_string(entries) +
                       " entries this import had published were removed again, so the cache "
                       "is as it was";
        else
            message += std::to_string(kept) + " of the " + std::to_string(entries) +
                       " entries this import had published could not be removed (they are "
                       "verified entries and can stay)";
        fail(file, message + ". Fix the cause and import again.");
    };

    for (std::size_t index = 0; index < spans.size(); ++index) {
        RecordSpan& span = spans[index];
        // Read again and checked again: the file may have changed since it was validated. Entries
        // that passed a check are kept from then, not read again.
        std::string fields, entry, source, hash;
        const std::uint64_t entry_at = span.offset + kRecordHeaderSize;
        if (span.checked_entry) {
            entry = std::move(*span.checked_entry);
            source = std::move(*span.checked_source);
        } else if (detail::read_at(in.fd(), span.offset, kRecordHeaderSize, fields) != 0 ||
                   detail::read_at(in.fd(), entry_at, span.entry_size, entry) != 0 ||
                   detail::read_at(in.fd(), entry_at + span.entry_size, span.source_size, source) !=
                       0 ||
                   record_hash(fields, entry, source) != span.hash ||
                   !decode_entry(entry, span.key).entry)
            roll_back("it changed while it was being imported (record " + std::to_string(index) +
                      ")");
        // With trusted keys only what one of them signed comes in, marked as checked; without,
        // as come from elsewhere. Either way it never passes for this user's own compile.
        const TrustedKeys* keys = m_directory->config().trusted_keys.get();
        if (keys &&
            detail::check_trust(entry, detail::SealDomain::entry, detail::Origin::archive, keys)
                    .verdict != detail::Verdict::trusted) {
            ++result.untrusted;
            continue;
        }
        detail::set_provenance(entry, keys ? Provenance::verified : Provenance::imported);
        if (peek(span.key)) {
            ++result.present; // a verified entry already: left as it is
        } else {
            if (int error = m_directory->put(span.key, entry))
                roll_back("cannot publish " + span.key.hex() + " into " +
                          m_directory->config().dir.string() + " (" + std::strerror(error) + ")");
            remember(span.key, detail::kEntrySuffix);
            ++result.entries;
            result.bytes += entry.size();
        }
        if (!source.empty() && !exists(span.key, detail::kSourceSuffix)) {
            if (int error = m_directory->put_source(span.key, source))
                roll_back("cannot publish the source of " + span.key.hex() + " (" +
                          std::strerror(error) + ")");
            remember(span.key, detail::kSourceSuffix);
            ++result.sources;
            result.bytes += source.size();
        }
    }
    return result;
}

} // namespace kiln::cache
