// read_all and read_all_into: the readers of cache files. Whole files of any size, in as few reads
// as the size allows; anything but a regular file, or a file over the limit, refused before it is
// read.

#include "local/fs.hpp"

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <string>

using kiln::cache::detail::open_at;
using kiln::cache::detail::read_all;
using kiln::cache::detail::read_all_into;
using kiln::cache::detail::UniqueFd;
using kiln::test::TempDir;

namespace {

std::string pattern(std::size_t size) {
    std::string bytes(size, '\0');
    for (std::size_t i = 0; i < size; ++i)
        bytes[i] = static_cast<char>((i * 131 + 7) % 251);
    return bytes;
}

UniqueFd open_file_in(const TempDir& dir, const std::string& name) {
    UniqueFd root(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    return open_at(root.get(), name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
}

} // namespace

TEST(ReadAll, ReadsWholeFilesOfEverySizeAndReportsTheirStatus) {
    TempDir dir;
    for (std::size_t size : {0u, 1u, 4095u, 4096u, 4097u, 65536u, 300001u}) {
        const std::string name = "f" + std::to_string(size);
        const std::string bytes = pattern(size);
        std::ofstream(dir.path() / name, std::ios::binary) << bytes;
        UniqueFd fd = open_file_in(dir, name);
        ASSERT_TRUE(fd) << name;
        std::string out = "left over";
        struct stat st {};
        ASSERT_EQ(read_all(fd.get(), 1u << 20, out, &st), 0) << name;
        EXPECT_EQ(out, bytes) << name;
        EXPECT_EQ(static_cast<std::size_t>(st.st_size), size);
        EXPECT_TRUE(S_ISREG(st.st_mode));
        // The descriptor is at the end: nothing was left unread.
        char more;
        EXPECT_EQ(::read(fd.get(), &more, 1), 0) << name;
    }
}

TEST(ReadAll, RefusesAFileOverTheLimitAndAnythingNotARegularFile) {
    TempDir dir;
    std::ofstream(dir.path() / "big", std::ios::binary) << pattern(1000);
    UniqueFd big = open_file_in(dir, "big");
    std::string out;
    EXPECT_EQ(read_all(big.get(), 999, out), EFBIG);
    EXPECT_EQ(read_all(big.get(), 1000, out), 0);
    EXPECT_EQ(out.size(), 1000u);

    ASSERT_EQ(::mkfifo((dir.path() / "fifo").c_str(), 0600), 0);
    UniqueFd fifo = open_file_in(dir, "fifo"); // O_NONBLOCK: opening a FIFO does not wait
    ASSERT_TRUE(fifo);
    EXPECT_EQ(read_all(fifo.get(), 1000, out), EINVAL);

    UniqueFd directory(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    EXPECT_EQ(read_all(directory.get(), 1000, out), EINVAL);
}

// A file with more bytes than fstat gave (procfs files report size 0) is still read to its end:
// read_all grows its buffer; read_all_into reads what fits, and a file that does not fit is left
// at its start for read_all to take over.
TEST(ReadAll, FilesLargerThanTheirStatusAreReadToTheEnd) {
    const char* const path = "/proc/self/cmdline"; // this test's own command line
    std::ifstream stream(path, std::ios::binary);
    const std::string expected{std::istreambuf_iterator<char>(stream), {}};
    ASSERT_GT(expected.size(), 8u);
    const auto open_it = [path] { return UniqueFd(::open(path, O_RDONLY | O_CLOEXEC)); };

    UniqueFd fd = open_it();
    ASSERT_TRUE(fd);
    struct stat st {};
    std::string whole;
    ASSERT_EQ(read_all(fd.get(), 1u << 20, whole, &st), 0);
    ASSERT_EQ(st.st_size, 0);
    EXPECT_EQ(whole, expected);

    std::string buffer(expected.size() + 1, '\0');
    std::size_t size = 0;
    fd = open_it();
    ASSERT_EQ(read_all_into(fd.get(), buffer.data(), buffer.size(), size), 0);
    EXPECT_EQ(buffer.substr(0, size), expected);

    fd = open_it();
    EXPECT_EQ(read_all_into(fd.get(), buffer.data(), 8, size), ENOBUFS);
    EXPECT_EQ(::lseek(fd.get(), 0, SEEK_CUR), 0);
    ASSERT_EQ(read_all(fd.get(), 1u << 20, whole), 0);
    EXPECT_EQ(whole, expected);
    fd = open_it(); // growing past the limit is refused too
    EXPECT_EQ(read_all(fd.get(), expected.size() - 1, whole), EFBIG);
}
