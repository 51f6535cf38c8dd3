#include "eviction.hpp"

#include <algorithm>

namespace kiln::cache::detail {

std::vector<Candidate> choose_victims(std::vector<Candidate> candidates, std::uint64_t max_bytes,
                                      std::optional<std::int64_t> older_than_ns, const Key* keep) {
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
        return a.item->mtime_ns < b.item->mtime_ns;
    });
    std::uint64_t total = 0;
    for (const auto& candidate : candidates)
        total += candidate.item->size();
    std::vector<Candidate> victims;
    for (const auto& candidate : candidates) {
        const bool too_old = older_than_ns && candidate.item->mtime_ns < *older_than_ns;
        if (!too_old && total <= max_bytes) break;
        if (keep && candidate.item->key == *keep) continue;
        victims.push_back(candidate);
        total -= candidate.item->size();
    }
    return victims;
}

} // namespace kiln::cache::detail
