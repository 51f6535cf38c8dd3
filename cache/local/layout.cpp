#include "layout.hpp"

namespace kiln::cache::detail {

std::string shard_name(int shard) {
    constexpr char kDigits[] = "0123456789abcdef";
    return {kDigits[(shard >> 4) & 0xf], kDigits[shard & 0xf]};
}

std::optional<Key> key_from_name(std::string_view name, std::string_view suffix) {
    if (name.size() != 32 + suffix.size() || name.substr(32) != suffix) return std::nullopt;
    auto key = Key::from_hex(name.substr(0, 32));
    // Only the canonical spelling: upper-case digits would name a second file for one key.
    if (!key || key->hex() != name.substr(0, 32)) return std::nullopt;
    return key;
}

} // namespace kiln::cache::detail
