// Why a key missed (kiln/cache/explain.hpp): one scan of the directory's entry heads into
// fingerprints, indexed by kernel, then a comparison of the wanted compile with each entry of
// its kernel.

#include "kiln/cache/explain.hpp"

#include "kiln/cache/local_store.hpp"

#include "directory.hpp"
#include "entry_head.hpp"
#include "layout.hpp"
#include "shard.hpp"

#include <algorithm>
#include <string_view>
#include <tuple>

namespace kiln::cache {

const char* to_string(KeyField field) {
    switch (field) {
    case KeyField::source:
        return "source";
    case KeyField::options:
        return "options";
    case KeyField::headers:
        return "headers";
    case KeyField::arch:
        return "arch";
    case KeyField::nvrtc:
        return "nvrtc";
    case KeyField::format:
        return "format";
    case KeyField::kiln:
        return "kiln";
    }
    return "unknown";
}

// What explain() compares of an entry: fingerprints of the recipe's parts (the recipe itself,
// sources and headers included, would make the index as large as the cache's metadata).
struct MissExplainer::Summary {
    Key key;
    std::string arch, nvrtc;
    std::uint32_t format = 0;
    std::int64_t mtime_ns = 0;
    bool has_recipe = false;
    Key source, options, headers; // meaningful with has_recipe
};

namespace {

// A JSON string at the start of @p text, its escapes kept as they are, consumed from @p text;
// nullopt when @p text does not start with one.
std::optional<std::string_view> take_string(std::string_view& text) {
    if (text.empty() || text.front() != '"') return std::nullopt;
    for (std::size_t i = 1; i < text.size(); ++i) {
        if (text[i] == '\\') {
            ++i;
        } else if (text[i] == '"') {
            const std::string_view value = text.substr(1, i - 1);
            text.remove_prefix(i + 1);
            return value;
        }
    }
    return std::nullopt;
}

bool take_char(std::string_view& text, char c) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\t'))
        text.remove_prefix(1);
    if (text.empty() || text.front() != c) return false;
    text.remove_prefix(1);
    while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\t'))
        text.remove_prefix(1);
    return true;
}

// "<front end>/<name>" of a front end's description, which starts
// {"<front end>": {"name": "<name>", ... (kernels/core/kernel_description.hpp); "" when it does
// not start so (a description this Kiln does not know: the kernel is then matched by symbol).
std::string spec_name(std::string_view description) {
    if (!take_char(description, '{')) return {};
    const auto front_end = take_string(description);
    if (!front_end || !take_char(description, ':') || !take_char(description, '{')) return {};
    const auto field = take_string(description);
    if (!field || *field != "name" || !take_char(description, ':')) return {};
    const auto name = take_string(description);
    if (!name) return {};
    return std::string(*front_end) + "/" + std::string(*name);
}

// The index keys of an entry's kernel: its spec, else each kernel symbol.
std::vector<std::string> kernel_ids(const Entry& entry) {
    if (entry.recipe) {
        if (std::string spec = spec_name(entry.recipe->description); !spec.empty())
            return {"spec:" + spec};
    }
    std::vector<std::string> ids;
    for (const auto& name : entry.kernel_names)
        ids.push_back("kernel:" + name);
    return ids;
}

} // namespace

MissExplainer::Summary MissExplainer::summarize(const Entry& entry, std::int64_t mtime_ns) {
    Summary s;
    s.key = entry.key;
    s.arch = entry.arch;
    s.nvrtc = entry.nvrtc_version;
    s.format = entry.format_version;
    s.mtime_ns = mtime_ns;
    if (!entry.recipe) return s;
    const Recipe& recipe = *entry.recipe;
    s.has_recipe = true;
    // Tagged and length-prefixed fields (KeyBuilder), so no two lists fingerprint alike.
    KeyBuilder source;
    source.add("source", recipe.source);
    for (const auto& input : entry.link_inputs) {
        source.add("link-input-kind", std::uint64_t{static_cast<std::uint32_t>(input.kind)});
        source.add("link-input-name", input.name).add("link-input", input.bytes);
        if (input.key) source.add("link-input-key", input.key->hex());
    }
    s.source = source.finish();
    KeyBuilder options;
    options.add("options", std::uint64_t{recipe.options.size()});
    for (const auto& option : recipe.options)
        options.add("option", option);
    options.add("lineinfo", std::uint64_t{recipe.lineinfo});
    options.add("name-expressions", std::uint64_t{recipe.name_expressions.size()});
    for (const auto& name : recipe.name_expressions)
        options.add("name-expression", name);
    s.options = options.finish();
    KeyBuilder headers;
    headers.add("headers", std::uint64_t{recipe.headers.size()});
    for (const auto& [name, content] : recipe.headers)
        headers.add("header-name", name).add("header", content);
    headers.add("cuda-headers", std::uint64_t{recipe.cuda_headers});
    s.headers = headers.finish();
    return s;
}

MissExplainer::MissExplainer(LocalStore& store) {
    detail::Directory& directory = *store.m_directory;
    for (int shard = 0; shard < detail::kShardCount; ++shard) {
        auto ref = directory.open_shard(shard, false);
        detail::ShardContents contents;
        if (!ref || detail::scan_shard(ref.get(), 0, contents) != 0) continue;
        const auto dir = directory.shard_dir(shard);
        for (const auto& item : contents.items) {
            if (!item.has_entry) continue;
            auto head = detail::read_entry_head(
                dir / (item.key.hex() + std::string(detail::kEntrySuffix)), item.key);
            if (!head) continue;
            const Entry& entry = *head->decoded.entry;
            const std::size_t index = m_entries.size();
            m_entries.push_back(summarize(entry, head->mtime_ns));
            for (auto& id : kernel_ids(entry))
                m_by_kernel.emplace(std::move(id), index);
        }
    }
}

MissExplainer::~MissExplainer() = default;
MissExplainer::MissExplainer(MissExplainer&&) noexcept = default;
MissExplainer& MissExplainer::operator=(MissExplainer&&) noexcept = default;

std::size_t MissExplainer::entries() const noexcept {
    return m_entries.size();
}

MissReason MissExplainer::explain(const Entry& wanted) const {
    const Summary want = summarize(wanted, 0);
    std::vector<std::size_t> candidates;
    for (const auto& id : kernel_ids(wanted)) {
        const auto [first, last] = m_by_kernel.equal_range(id);
        for (auto it = first; it != last; ++it)
            if (m_entries[it->second].key != wanted.key) candidates.push_back(it->second);
    }
    std::sort(candidates.begin(), candidates.end());
    candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());

    MissReason best;
    const Summary* best_entry = nullptr;
    for (const std::size_t index : candidates) {
        const Summary& have = m_entries[index];
        std::vector<KeyField> differs;
        const bool recipes = want.has_recipe && have.has_recipe;
        if (recipes && have.source != want.source) differs.push_back(KeyField::source);
        if (recipes && have.options != want.options) differs.push_back(KeyField::options);
        if (recipes && have.headers != want.headers) differs.push_back(KeyField::headers);
        if (have.arch != want.arch) differs.push_back(KeyField::arch);
        if (have.nvrtc != want.nvrtc) differs.push_back(KeyField::nvrtc);
        if (have.format != want.format) differs.push_back(KeyField::format);
        // All it records is the same, and still another key: the keying itself differs.
        if (recipes && differs.empty()) differs.push_back(KeyField::kiln);
        // Fewest differences first, then the most recently used, then key order (stable output).
        const bool better =
            !best_entry ||
            std::make_tuple(differs.size(), -have.mtime_ns, have.key) <
                std::make_tuple(best.differs.size(), -best_entry->mtime_ns, best_entry->key);
        if (better) {
            best.nearest = have.key;
            best.differs = std::move(differs);
            best_entry = &have;
        }
    }
    return best;
}

} // namespace kiln::cache
