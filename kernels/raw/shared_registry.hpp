#pragma once
// One object per key for as long as someone holds it: asked for the key while the object lives,
// the registry gives that object again; once its last holder lets it go, the entry goes too (at
// the next insert), so a registry of short-lived objects does not grow without end. RawModules
// built from the same program share their CUmodule in a context through one.

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace kiln::detail {

template <class Key, class T> class SharedRegistry {
  public:
    /// The live object for @p key, or a new one from @p make() (called under the registry's lock,
    /// so each key's object is made once at a time). Nothing is kept when make() throws.
    template <class Make> std::shared_ptr<T> get(const Key& key, Make&& make) {
        std::lock_guard<std::mutex> lock(m_mutex);
        const auto found = m_entries.find(key);
        if (found != m_entries.end())
            if (std::shared_ptr<T> existing = found->second.lock()) return existing;
        std::shared_ptr<T> made = make();
        for (auto entry = m_entries.begin(); entry != m_entries.end();)
            entry = entry->second.expired() ? m_entries.erase(entry) : std::next(entry);
        m_entries[key] = made;
        return made;
    }

    /// Entries held, live or not yet erased.
    std::size_t size() const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_entries.size();
    }

  private:
    mutable std::mutex m_mutex;
    std::map<Key, std::weak_ptr<T>> m_entries;
};

} // namespace kiln::detail
