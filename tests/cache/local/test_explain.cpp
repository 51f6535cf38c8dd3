// Why a key missed (kiln/cache/explain.hpp): the nearest entry of the same kernel and the key
// fields that differ, each field changed on its own.

#include "kiln/cache/explain.hpp"
#include "kiln/cache/local_store.hpp"
#include "kiln/cache/store.hpp"

#include "../cache_test_util.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using kiln::cache::Entry;
using kiln::cache::KeyField;
using kiln::cache::MissExplainer;
using kiln::cache::MissReason;
using kiln::cache::Recipe;
using kiln::cache::Store;
using kiln::test::config_for;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;

namespace {

// An entry of the kernel `scale` as the compiler writes it: a recipe, its kernels' names.
Entry compiled(const std::string& name) {
    Entry entry = make_entry(key_of(name));
    entry.kernel_names = {"scale"};
    Recipe recipe;
    recipe.source = "extern \"C\" __global__ void scale(float* x) { x[0] *= 2; }";
    recipe.options = {"-DN=4"};
    recipe.headers = {{"types.cuh", "struct T {};"}};
    recipe.name_expressions = {"scale"};
    recipe.program_name = "/cache/ab/" + name + ".cu";
    entry.recipe = recipe;
    return entry;
}

std::vector<KeyField> fields(std::initializer_list<KeyField> list) {
    return list;
}

class Explain : public ::testing::Test {
  protected:
    TempDir m_dir;
    Store m_store{config_for(m_dir.path())};
    Entry m_stored = compiled("stored");

    void SetUp() override { ASSERT_TRUE(m_store.store(m_stored)); }

    // The reason a compile like the stored one, changed by @p change under a key of its own,
    // misses.
    MissReason explain(const std::function<void(Entry&)>& change) {
        Entry wanted = compiled("wanted");
        change(wanted);
        return MissExplainer(m_store.local()).explain(wanted);
    }
};

} // namespace

TEST_F(Explain, NamesEachKeyFieldChangedOnItsOwn) {
    const struct {
        KeyField field;
        std::function<void(Entry&)> change;
    } cases[] = {
        {KeyField::source, [](Entry& e) { e.recipe->source += "\n// edited"; }},
        {KeyField::source,
         [](Entry& e) {
             e.link_inputs.push_back({kiln::cache::LinkInputKind::object, "part.o", "bytes", {}});
         }},
        {KeyField::options, [](Entry& e) { e.recipe->options = {"-DN=8"}; }},
        {KeyField::options, [](Entry& e) { e.recipe->lineinfo = false; }},
        {KeyField::options, [](Entry& e) { e.recipe->name_expressions.clear(); }},
        {KeyField::headers, [](Entry& e) { e.recipe->headers[0].second += " "; }},
        {KeyField::headers, [](Entry& e) { e.recipe->cuda_headers = false; }},
        {KeyField::arch, [](Entry& e) { e.arch = "sm_80"; }},
        {KeyField::nvrtc, [](Entry& e) { e.nvrtc_version = "12.9.41"; }},
        {KeyField::format, [](Entry& e) { e.format_version = 2; }},
        // The same inputs under another key: the Kiln that wrote it keys them otherwise.
        {KeyField::kiln, [](Entry&) {}},
    };
    for (const auto& c : cases) {
        const MissReason why = explain(c.change);
        ASSERT_TRUE(why.nearest) << kiln::cache::to_string(c.field);
        EXPECT_EQ(*why.nearest, m_stored.key);
        EXPECT_EQ(why.differs, fields({c.field})) << "expected " << kiln::cache::to_string(c.field);
    }
}

TEST_F(Explain, TheProgramNameAndDescriptionAreNoKeyFields) {
    const MissReason why = explain([](Entry& e) { e.recipe->program_name = "elsewhere.cu"; });
    EXPECT_EQ(why.differs, fields({KeyField::kiln}));
}

TEST_F(Explain, SeveralFieldsAreNamedInOrder) {
    const MissReason why = explain([](Entry& e) {
        e.arch = "sm_80";
        e.recipe->options.push_back("--use_fast_math");
    });
    EXPECT_EQ(why.differs, fields({KeyField::options, KeyField::arch}));
}

TEST_F(Explain, NoEntryOfTheKernelHasNoNearest) {
    const MissReason why = explain([](Entry& e) { e.kernel_names = {"other_kernel"}; });
    EXPECT_FALSE(why.nearest);
    EXPECT_TRUE(why.differs.empty());
}

TEST_F(Explain, AnEntryIsNeverItsOwnNearest) {
    const MissReason why = MissExplainer(m_store.local()).explain(m_stored);
    EXPECT_FALSE(why.nearest);
}

TEST_F(Explain, TheNearestDiffersInTheFewestFields) {
    Entry close = compiled("close");
    close.arch = "sm_80";
    ASSERT_TRUE(m_store.store(close));
    const MissReason why = explain([](Entry& e) {
        e.arch = "sm_80";
        e.recipe->options = {"-DN=8"};
    });
    ASSERT_TRUE(why.nearest);
    EXPECT_EQ(*why.nearest, close.key);
    EXPECT_EQ(why.differs, fields({KeyField::options}));
}

TEST(ExplainFrontEnd, AFrontEndKernelIsMatchedBySpecName) {
    TempDir dir;
    Store store(config_for(dir.path()));
    auto described = [](const std::string& name, const std::string& spec) {
        Entry entry = compiled(name);
        entry.kernel_names = {"generated_" + name}; // symbols need not match
        entry.recipe->description =
            "{\"elementwise\":{\"name\":\"" + spec + "\",\"in_params\":\"T x\"},\"args\":[]}";
        return entry;
    };
    const Entry scale = described("scale32", "scale");
    ASSERT_TRUE(store.store(scale));
    ASSERT_TRUE(store.store(described("other", "other")));
    MissExplainer explainer(store.local());
    EXPECT_EQ(explainer.entries(), 2u);

    Entry wanted = described("scale64", "scale");
    wanted.recipe->source += "// double";
    const MissReason why = explainer.explain(wanted);
    ASSERT_TRUE(why.nearest);
    EXPECT_EQ(*why.nearest, scale.key);
    EXPECT_EQ(why.differs, fields({KeyField::source}));

    EXPECT_FALSE(explainer.explain(described("new", "new")).nearest);
}

TEST(ExplainFrontEnd, AnEmptyDirectoryExplainsNothing) {
    TempDir dir;
    Store store(config_for(dir.path()));
    MissExplainer explainer(store.local());
    EXPECT_EQ(explainer.entries(), 0u);
    EXPECT_FALSE(explainer.explain(compiled("any")).nearest);
}
