#pragma once
// The buffer a cache lookup reads an entry file into. A lookup verifies the whole file (header,
// metadata with the recipe, payload) but keeps only the payload and a few names; read into a
// fresh heap buffer, the file cost a fresh process's first lookup a page fault per 4 KB it never
// keeps (9-14 faults for a generated kernel's entry, about 3 us each on a VM). This buffer is
// process-wide, and kiln::prepare() (Store::warm_up) faults its pages in beside the driver's
// load, so only the payload copied out of it touches new memory.
//
// One lookup at a time holds it; a lookup that finds it held, or a file larger than it, reads
// into a buffer of its own as before.

#include <cstddef>
#include <mutex>

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

} // namespace kiln::cache::detail
