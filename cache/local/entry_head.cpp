#include "entry_head.hpp"

#include <sys/stat.h>

namespace kiln::cache::detail {

std::optional<EntryHead> read_entry_head(const std::filesystem::path& path, const Key& key) {
    EntryHead head;
    head.fd = open_file(path, kReadFlags);
    struct stat st;
    if (!head.fd || ::fstat(head.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    head.file_size = static_cast<std::uint64_t>(st.st_size);
    head.mtime_ns = std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
    // The fixed header says how long the metadata is; then header and metadata in one read.
    std::string bytes;
    if (head.file_size < kEntryHeaderSize ||
        read_at(head.fd.get(), 0, kEntryHeaderSize, bytes) != 0)
        return std::nullopt;
    head.head_size = entry_head_size(bytes);
    if (head.head_size == 0 || head.head_size > head.file_size ||
        read_at(head.fd.get(), 0, static_cast<std::size_t>(head.head_size), bytes) != 0)
        return std::nullopt;
    head.decoded = decode_entry_head(bytes, head.file_size, key);
    if (!head.decoded.entry) return std::nullopt;
    return head;
}

} // namespace kiln::cache::detail
