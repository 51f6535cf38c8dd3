// The reason for a miss, as the commands print it (miss_reason.hpp).

#include "miss_reason.hpp"

#include <algorithm>

namespace kiln::tools {

nlohmann::json why_json(const cache::MissReason& why) {
    nlohmann::json differs = nlohmann::json::array();
    for (const auto field : why.differs)
        differs.push_back(cache::to_string(field));
    return {{"nearest", why.nearest ? nlohmann::json(why.nearest->hex()) : nlohmann::json(nullptr)},
            {"differs", differs}};
}

std::string why_text(const cache::MissReason& why) {
    if (!why.nearest) return "no entry of this kernel in the cache";
    std::string fields;
    for (const auto field : why.differs)
        fields += std::string(fields.empty() ? "" : ", ") + cache::to_string(field);
    return "the nearest entry of this kernel, " + why.nearest->hex() +
           ", differs in: " + (fields.empty() ? "nothing it records (it holds no recipe)" : fields);
}

nlohmann::json why_stored(const cache::MissExplainer& explainer, cache::LocalStore& store,
                          const cache::Key& key) {
    const auto entry = store.peek(key);
    if (!entry) return nullptr;
    return why_json(explainer.explain(*entry));
}

nlohmann::json missed_json(const std::vector<std::string>& records) {
    std::vector<nlohmann::json> missed;
    for (const auto& line : records)
        missed.push_back(nlohmann::json::parse(line, nullptr, false));
    missed.erase(
        std::remove_if(missed.begin(), missed.end(), [](const auto& j) { return !j.is_object(); }),
        missed.end());
    std::sort(missed.begin(), missed.end(),
              [](const auto& a, const auto& b) { return a.value("job", 0) < b.value("job", 0); });
    nlohmann::json list = nlohmann::json::array();
    for (auto& j : missed) {
        j.erase("job");
        list.push_back(std::move(j));
    }
    return list;
}

} // namespace kiln::tools
