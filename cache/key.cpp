#include "kiln/cache/key.hpp"

#include <xxhash.h>

#include <cstring>

namespace kiln::cache {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Little-endian whatever the host, so keys are the same on every machine.
void little_endian(std::uint64_t value, unsigned char (&bytes)[8]) {
    for (int i = 0; i < 8; ++i)
        bytes[i] = static_cast<unsigned char>(value >> (8 * i));
}

void put_u64(XXH3_state_t* state, std::uint64_t value) {
    unsigned char bytes[8];
    little_endian(value, bytes);
    XXH3_128bits_update(state, bytes, sizeof bytes);
}

void put_field(XXH3_state_t* state, std::string_view tag, const void* value, std::size_t size) {
    put_u64(state, tag.size());
    XXH3_128bits_update(state, tag.data(), tag.size());
    put_u64(state, size);
    XXH3_128bits_update(state, value, size);
}

} // namespace

std::string Key::hex() const {
    std::string text(32, '0');
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        text[2 * i] = kHexDigits[bytes[i] >> 4];
        text[2 * i + 1] = kHexDigits[bytes[i] & 0xf];
    }
    return text;
}

std::optional<Key> Key::from_hex(std::string_view text) {
    if (text.size() != 32) return std::nullopt;
    Key key;
    for (std::size_t i = 0; i < key.bytes.size(); ++i) {
        const int high = hex_value(text[2 * i]);
        const int low = hex_value(text[2 * i + 1]);
        if (high < 0 || low < 0) return std::nullopt;
        key.bytes[i] = static_cast<std::uint8_t>(high << 4 | low);
    }
    return key;
}

struct KeyBuilder::State {
    XXH3_state_t xxh;
};

KeyBuilder::KeyBuilder()
    : m_state(new State) {
    XXH3_128bits_reset(&m_state->xxh);
}

KeyBuilder::~KeyBuilder() {
    delete m_state;
}

KeyBuilder& KeyBuilder::add(std::string_view tag, std::string_view value) {
    put_field(&m_state->xxh, tag, value.data(), value.size());
    return *this;
}

KeyBuilder& KeyBuilder::add(std::string_view tag, std::uint64_t value) {
    unsigned char bytes[8];
    little_endian(value, bytes);
    put_field(&m_state->xxh, tag, bytes, sizeof bytes);
    return *this;
}

Key KeyBuilder::finish() const {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(&m_state->xxh));
    Key key;
    static_assert(sizeof canonical.digest == sizeof key.bytes);
    std::memcpy(key.bytes.data(), canonical.digest, sizeof canonical.digest);
    return key;
}

std::size_t KeyHash::operator()(const Key& k) const noexcept {
    // The key is already a uniform hash: any 8 of its bytes make a good bucket index.
    std::uint64_t value;
    std::memcpy(&value, k.bytes.data(), sizeof value);
    return static_cast<std::size_t>(value);
}

} // namespace kiln::cache
