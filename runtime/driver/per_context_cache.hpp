#pragma once
// One value per (CUDA context, key), made on first use and kept while the cache lives: the one
// per-context cache that everything Kiln compiles and loads goes through (the runtime's own
// kernels; RawModule and RawKernel; each generated kernel's specializations, keyed by their
// signature; reduction workspaces, keyed by stream).
//
// Lookups are lock-free however many contexts use one cache: a reader makes acquire loads over an
// insert-only open-addressing table, so a kernel used on several devices stays on the fast path
// on each. Inserts take a mutex. A value never moves: a reference to it stays valid until the
// cache is destroyed. A full table is replaced by one twice its size; the old one is kept (a
// reader may still be walking it) and freed with the cache.
//
// Caveat: an entry outlives its context. A context destroyed and another created at the same
// address would find the old entry; Kiln holds the primary contexts it uses, so they stay.

#include <cuda.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace kiln::detail {

/// The key of a cache that holds one value per context and nothing more.
struct NoKey {
    bool operator==(const NoKey&) const noexcept { return true; }
};
struct NoKeyHash {
    std::size_t operator()(const NoKey&) const noexcept { return 0; }
};

template <class Value, class Key = NoKey, class Hash = NoKeyHash> class PerContextCache {
  public:
    PerContextCache() = default;
    PerContextCache(const PerContextCache&) = delete;
    PerContextCache& operator=(const PerContextCache&) = delete;
    ~PerContextCache() {
        if (const Table* table = m_table.load(std::memory_order_relaxed))
            for (std::size_t i = 0; i <= table->mask; ++i)
                delete table->slots[i].load(std::memory_order_relaxed);
    }

    /// The value for @p key in @p context, or nullptr. Lock-free.
    const Value* find(CUcontext context, const Key& key) const noexcept {
        const Node* node =
            find_in(m_table.load(std::memory_order_acquire), context, key, hash(context, key));
        return node ? &node->value : nullptr;
    }

    /// The value for @p key in @p context; on first use, made by @p make() (lock-free after).
    /// make() runs outside the lock, so a slow one (a compile) holds up no other key; when two
    /// threads make the same value at once, the first to insert wins and the other's is dropped.
    /// Nothing is inserted when make() throws. What changes in a value afterwards is the caller's
    /// to guard.
    template <class Make> Value& get(CUcontext context, const Key& key, Make&& make) {
        const std::size_t h = hash(context, key);
        if (Node* node = find_in(m_table.load(std::memory_order_acquire), context, key, h))
            return node->value;
        auto made = std::make_unique<Node>(context, key, h, make);
        std::lock_guard<std::mutex> lock(m_mutex);
        ++m_misses;
        Table* table = m_table.load(std::memory_order_relaxed);
        if (Node* node = find_in(table, context, key, h)) return node->value;
        if (!table || (m_size + 1) * 2 > table->mask + 1) table = grow(table);
        place(*table, made.get());
        ++m_size;
        return made.release()->value;
    }

    /// Values held.
    std::size_t size() const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_size;
    }
    /// The lookups that took the lock: those that missed (each made a value, kept or dropped).
    std::size_t misses() const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_misses;
    }

  private:
    struct Node {
        template <class Make>
        Node(CUcontext c, const Key& k, std::size_t h, Make& make)
            : context(c)
            , key(k)
            , hash(h)
            , value(make()) {}
        CUcontext context;
        Key key;
        std::size_t hash;
        Value value;
    };
    struct Table {
        explicit Table(std::size_t capacity)
            : mask(capacity - 1)
            , slots(new std::atomic<Node*>[capacity]) {
            for (std::size_t i = 0; i < capacity; ++i)
                slots[i].store(nullptr, std::memory_order_relaxed);
        }
        std::size_t mask; // capacity - 1, a power of two less one
        std::unique_ptr<std::atomic<Node*>[]> slots;
    };

    static std::size_t hash(CUcontext context, const Key& key) noexcept {
        std::uint64_t h = static_cast<std::uint64_t>(Hash{}(key)) ^
                          reinterpret_cast<std::uintptr_t>(context) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 31;
        return static_cast<std::size_t>(h * 0xff51afd7ed558ccdull);
    }

    static Node* find_in(const Table* table, CUcontext context, const Key& key,
                         std::size_t h) noexcept {
        if (!table) return nullptr;
        for (std::size_t i = h & table->mask;; i = (i + 1) & table->mask) {
            Node* node = table->slots[i].load(std::memory_order_acquire);
            if (!node) return nullptr;
            if (node->hash == h && node->context == context && node->key == key) return node;
        }
    }

    // Under the lock: @p node into a free slot of @p table, published to readers.
    static void place(Table& table, Node* node) noexcept {
        std::size_t i = node->hash & table.mask;
        while (table.slots[i].load(std::memory_order_relaxed))
            i = (i + 1) & table.mask;
        table.slots[i].store(node, std::memory_order_release);
    }

    // Under the lock: a table twice as large holding every node, published to readers.
    Table* grow(const Table* old) {
        auto table = std::make_unique<Table>(old ? 2 * (old->mask + 1) : 8);
        if (old)
            for (std::size_t i = 0; i <= old->mask; ++i)
                if (Node* node = old->slots[i].load(std::memory_order_relaxed)) place(*table, node);
        Table* published = table.get();
        m_tables.push_back(std::move(table));
        m_table.store(published, std::memory_order_release);
        return published;
    }

    std::atomic<Table*> m_table{nullptr};
    mutable std::mutex m_mutex;
    std::vector<std::unique_ptr<Table>> m_tables; // every table made: readers may hold any
    std::size_t m_size = 0, m_misses = 0;
};

} // namespace kiln::detail
