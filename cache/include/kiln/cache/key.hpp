#pragma once
/// @file
/// Cache keys: XXH3-128 over a canonical serialization of named, length-prefixed fields.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache {

/// A 128-bit content key, printed as 32 lower-case hex digits.
struct Key {
    std::array<std::uint8_t, 16> bytes{};

    std::string hex() const;
    /// Parse 32 hex digits; nullopt for anything else (so no path can be smuggled in).
    static std::optional<Key> from_hex(std::string_view text);

    friend bool operator==(const Key& a, const Key& b) { return a.bytes == b.bytes; }
    friend bool operator!=(const Key& a, const Key& b) { return !(a == b); }
    friend bool operator<(const Key& a, const Key& b) { return a.bytes < b.bytes; }
};

/// Builds a Key from fields. Each field is serialized as its tag and value, both length-prefixed,
/// so no two different field lists serialize alike ("ab"+"c" differs from "a"+"bc").
class KeyBuilder {
  public:
    KeyBuilder();
    ~KeyBuilder();
    KeyBuilder(const KeyBuilder&) = delete;
    KeyBuilder& operator=(const KeyBuilder&) = delete;

    KeyBuilder& add(std::string_view tag, std::string_view value);
    KeyBuilder& add(std::string_view tag, std::uint64_t value);
    Key finish() const;

  private:
    struct State;
    State* m_state;
};

struct KeyHash {
    std::size_t operator()(const Key& k) const noexcept;
};

} // namespace kiln::cache
