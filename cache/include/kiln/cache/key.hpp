#pragma once
/// @file
/// Cache keys: XXH3-128 over a canonical serialization of named, length-prefixed fields. The
/// compiler builds one for every compile from everything that can change the cubin
/// (docs/cache.md lists it), and the store names each entry's file after it, so a key is also
/// how `kiln cache` commands name an entry.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// A 128-bit content key, printed as 32 lower-case hex digits.
struct Key {
    /// The digest, in XXH3's canonical (big-endian) byte order.
    std::array<std::uint8_t, 16> bytes{};

    /// The key as 32 lower-case hex digits.
    /// @return the 32 lower-case hex digits that name the entry's file.
    std::string hex() const;
    /// Parse 32 hex digits; nullopt for anything else (so no path can be smuggled in).
    /// @param text the digits, upper or lower case.
    /// @return the key, or nullopt.
    static std::optional<Key> from_hex(std::string_view text);

    /// Keys compare by their bytes.
    /// @param a a key.
    /// @param b another key.
    /// @return whether the bytes are equal.
    friend bool operator==(const Key& a, const Key& b) { return a.bytes == b.bytes; }
    /// Keys compare by their bytes.
    /// @param a a key.
    /// @param b another key.
    /// @return whether the bytes differ.
    friend bool operator!=(const Key& a, const Key& b) { return !(a == b); }
    /// Byte-wise order, the order of hex(), for sorted listings.
    /// @param a a key.
    /// @param b another key.
    /// @return whether @p a sorts before @p b.
    friend bool operator<(const Key& a, const Key& b) { return a.bytes < b.bytes; }
};

/// Builds a Key from fields. Each field is serialized as its tag and value, both length-prefixed,
/// so no two different field lists serialize alike ("ab"+"c" differs from "a"+"bc").
class KeyBuilder {
  public:
    /// An empty field list.
    KeyBuilder();
    /// Frees the hash state.
    ~KeyBuilder();
    /// Not copyable: a builder is used once, in one place.
    KeyBuilder(const KeyBuilder&) = delete;
    /// Not copyable.
    KeyBuilder& operator=(const KeyBuilder&) = delete;

    /// Append a field with a string value.
    /// @param tag the field's name; a field that may be absent or repeated still needs a tag of
    /// its own, so that two lists cannot serialize alike.
    /// @param value its value, any bytes.
    /// @return this builder, to chain calls.
    KeyBuilder& add(std::string_view tag, std::string_view value);
    /// Append a field with an integer value, serialized as 8 little-endian bytes.
    /// @param tag the field's name.
    /// @param value its value.
    /// @return this builder, to chain calls.
    KeyBuilder& add(std::string_view tag, std::uint64_t value);
    /// The key of the fields added so far; the builder can take more fields afterwards.
    /// @return the key.
    Key finish() const;

  private:
    struct State;
    State* m_state;
};

/// Hash for `std::unordered_map<Key, ..., KeyHash>`: a key is already a uniform hash, so this
/// takes eight of its bytes.
struct KeyHash {
    /// The bucket hash of @p k.
    /// @param k a key.
    /// @return its hash.
    std::size_t operator()(const Key& k) const noexcept;
};

} // namespace kiln::cache
