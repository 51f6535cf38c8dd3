#pragma once
// The buffer a cache lookup reads an entry file into. A lookup verifies the whole file (header,
// metadata with the recipe, payload) but keeps only the payload and a few names; read into a
// fresh heap buffer, the file cost a fresh process's first lookup a page fault per 4 KB it never
// keeps (9-14 faults for a generated kernel's entry, about 3 us each on a VM). This buffer is
// process-wide, and kiln::prepare() (Store::warm_up) faults its pages in beside the driver's
// load, so only the payload copied out of it touches new memory.
//
// One lookup at a time holds it; a lookup that finds it held, or a file larger than it, reads
// into a buffer of its own as before (read_for_lookup() does both; entries and memos use it).

#include "fs.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace kiln::cache::detail {

class ReadScratch {
  public:
    /// Entry files up to this size (less one byte, to see the end) are read into the buffer.
    static constexpr std::size_t kCapacity = std::size_t{128} << 10;

    /// The buffer, held until this object goes; empty when another thread holds it.
    static ReadScratch take() noexcept;
    /// Write to every page of the buffer (when no lookup holds it), so that no lookup faults.
    static void fault_in() noexcept;

    explicit operator bool() const noexcept { return m_lock.owns_lock(); }
    char* data() const noexcept;

  private:
    explicit ReadScratch(std::unique_lock<std::mutex> lock) noexcept
        : m_lock(std::move(lock)) {}
    std::unique_lock<std::mutex> m_lock;
};

/// Read the whole regular file @p fd for a lookup: into the buffer when it is free and the file
/// fits, handing @p from_view the bytes there, else into a string of the file's own (at most
/// @p max_size bytes), handed to @p from_string to keep or take. @p st receives the fstat(2) made.
/// 0 or an errno (EFBIG over @p max_size, EINVAL for anything but a regular file).
template <class FromView, class FromString>
int read_for_lookup(int fd, std::uint64_t max_size, struct stat* st, FromView&& from_view,
                    FromString&& from_string) {
    int error = ENOBUFS;
    if (auto scratch = ReadScratch::take()) {
        std::size_t size = 0;
        error = read_all_into(fd, scratch.data(), ReadScratch::kCapacity, size, st);
        if (error == 0) from_view(std::string_view(scratch.data(), size));
    }
    if (error == ENOBUFS) {
        std::string bytes;
        error = read_all(fd, max_size, bytes, st);
        if (error == 0) from_string(std::move(bytes));
    }
    return error;
}

} // namespace kiln::cache::detail
