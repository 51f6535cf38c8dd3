// A lookup reads an entry into the process's read buffer when it is free and the file fits, and
// into a buffer of its own otherwise; both paths verify the same way and give the same entry.

#include "local/read_scratch.hpp"

#include "../cache_test_util.hpp"
#include "local/fs.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

using kiln::cache::Store;
using kiln::cache::detail::read_all_into;
using kiln::cache::detail::ReadScratch;
using kiln::cache::detail::UniqueFd;
using kiln::test::config_for;
using kiln::test::key_of;
using kiln::test::make_entry;
using kiln::test::TempDir;

namespace {

// Flips one byte of the payload (the file's last bytes) of @p key's entry.
void damage_payload(const TempDir& dir, const kiln::cache::Key& key) {
    const std::string hex = key.hex();
    const auto path = dir.path() / hex.substr(0, 2) / (hex + ".kiln");
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekg(-10, std::ios::end);
    char byte = 0;
    file.read(&byte, 1);
    file.seekp(-10, std::ios::end);
    byte = static_cast<char>(byte ^ 0x40);
    file.write(&byte, 1);
}

} // namespace

TEST(ReadScratch, OneHolderAtATime) {
    ReadScratch first = ReadScratch::take();
    ASSERT_TRUE(first);
    EXPECT_NE(first.data(), nullptr);
    ReadScratch second = ReadScratch::take();
    EXPECT_FALSE(second);
    EXPECT_EQ(second.data(), nullptr);
    ReadScratch::fault_in(); // held: does nothing, and does not wait
}

TEST(ReadScratch, EntriesThatFitAndEntriesThatDoNotLoadAlikeAndDamageIsCaughtInBoth) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto small = make_entry(key_of("small"), 20000);
    const auto large = make_entry(key_of("large"), ReadScratch::kCapacity + 5000);
    ASSERT_TRUE(store.store(small));
    ASSERT_TRUE(store.store(large));
    for (const auto* entry : {&small, &large}) {
        auto loaded = store.load(entry->key);
        ASSERT_TRUE(loaded) << entry->payload.size();
        EXPECT_EQ(loaded->payload, entry->payload);
        EXPECT_EQ(loaded->lowered_names, entry->lowered_names);
        EXPECT_EQ(loaded->log, entry->log);
    }
    damage_payload(dir, small.key);
    damage_payload(dir, large.key);
    EXPECT_FALSE(store.load(small.key));
    EXPECT_FALSE(store.load(large.key));
    EXPECT_EQ(store.local().stats().damaged, 2u);
}

TEST(ReadScratch, ALookupThatFindsTheBufferHeldReadsIntoItsOwn) {
    TempDir dir;
    Store store(config_for(dir.path()));
    const auto entry = make_entry(key_of("held"), 9000);
    ASSERT_TRUE(store.store(entry));
    {
        ReadScratch held = ReadScratch::take(); // as another thread's lookup would
        ASSERT_TRUE(held);
        auto loaded = store.load(entry.key);
        ASSERT_TRUE(loaded);
        EXPECT_EQ(loaded->payload, entry.payload);
    }
    auto loaded = store.load(entry.key);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(loaded->payload, entry.payload);
}

TEST(ReadAllInto, ReadsWhatFitsAndLeavesTheRestAtItsStart) {
    TempDir dir;
    char buffer[4096];
    for (std::size_t size : {0u, 1u, 4094u, 4095u, 4096u, 9000u}) {
        const std::string bytes(size, 'k');
        const auto path = dir.path() / ("f" + std::to_string(size));
        std::ofstream(path, std::ios::binary) << bytes;
        UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
        ASSERT_TRUE(fd);
        std::size_t got = 12345;
        struct stat st {};
        const int error = read_all_into(fd.get(), buffer, sizeof buffer, got, &st);
        EXPECT_EQ(static_cast<std::size_t>(st.st_size), size);
        if (size < sizeof buffer) {
            ASSERT_EQ(error, 0) << size;
            EXPECT_EQ(std::string(buffer, got), bytes);
        } else {
            // One byte of room is needed to see the end: these go to read_all, from the start.
            EXPECT_EQ(error, ENOBUFS) << size;
            EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), 0);
        }
    }
    UniqueFd directory(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::size_t got = 0;
    EXPECT_EQ(read_all_into(directory.get(), buffer, sizeof buffer, got), EINVAL);
}
