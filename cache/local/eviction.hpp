#pragma once
// Choosing what to evict: least recently used first, by modification time (refreshed on hits).

#include "shard.hpp"

#include <cstdint>
#include <optional>
#include <vector>

namespace kiln::cache::detail {

/// One candidate; @p shard says where it lives.
struct Candidate {
    const ShardItem* item;
    int shard;
};

/// The candidates to remove: all modified before @p older_than_ns (when given), then the least
/// recently used until the rest holds at most @p max_bytes. @p keep (when given) is never chosen.
std::vector<Candidate> choose_victims(std::vector<Candidate> candidates, std::uint64_t max_bytes,
                                      std::optional<std::int64_t> older_than_ns,
                                      const Key* keep = nullptr);

} // namespace kiln::cache::detail
