// What compressed entries save and cost (issue 40 item 1): over a warmed cache directory (`kiln
// warm` of generated kernels), each entry's size as stored (zstd with Kiln's dictionary) against
// the same entry uncompressed (as Kiln wrote it before), the archives `kiln cache export` makes of
// both, and for the reduction entry with the most metadata its cubin, its sizes and what decoding
// it costs a hit, compressed and not. CPU only.
//
//   bench_entry_size DIR     DIR: a cache directory; writes DIR.uncompressed and two archives
//                            beside it

#include "kiln/cache/config.hpp"
#include "kiln/cache/entry.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/local_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using kiln::cache::Compression;
using kiln::cache::EntryParts;

// As a lookup reads: open, size, one read.
std::string read(const fs::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    std::string bytes;
    if (fd >= 0 && ::fstat(fd, &st) == 0) {
        bytes.resize(static_cast<std::size_t>(st.st_size));
        if (::read(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
            bytes.clear();
    }
    if (fd >= 0) ::close(fd);
    return bytes;
}

void write(const fs::path& path, const std::string& bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
}

// Median microseconds of @p f over @p rounds calls.
template <class F> double median_us(int rounds, F f) {
    std::vector<double> times;
    times.reserve(rounds);
    for (int i = 0; i < rounds; ++i) {
        const auto start = std::chrono::steady_clock::now();
        f();
        times.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                .count());
    }
    std::nth_element(times.begin(), times.begin() + rounds / 2, times.end());
    return times[rounds / 2];
}

struct Sample {
    kiln::cache::Key key;
    std::string compressed, uncompressed;
    fs::path compressed_file, uncompressed_file;
    std::size_t cubin = 0;
};

void time_decoding(const Sample& s) {
    std::printf("decode, median of 2000 (us)   compressed   uncompressed\n");
    auto row = [&](const char* what, auto f) {
        std::printf("  %-27s %10.2f %14.2f\n", what, median_us(2000, [&] { f(s.compressed); }),
                    median_us(2000, [&] { f(s.uncompressed); }));
    };
    // What a hit from disk does: the file's bytes handed over, the load's fields read out.
    row("hit (in place, for loading)", [&](const std::string& bytes) {
        auto r =
            kiln::cache::decode_entry_in_place(std::string(bytes), s.key, EntryParts::for_loading);
        if (!r.entry) std::abort();
    });
    row("everything (decode_entry)", [&](const std::string& bytes) {
        if (!kiln::cache::decode_entry(bytes, s.key).entry) std::abort();
    });
    row("copy of the file's bytes", [&](const std::string& bytes) {
        std::string copy(bytes);
        if (copy.empty()) std::abort();
    });
    // The lookup's part of a first call from disk: open and read the file (page cache), decode.
    std::printf("  %-27s %10.2f %14.2f\n", "read file + hit decode",
                median_us(2000,
                          [&] {
                              auto r = kiln::cache::decode_entry_in_place(
                                  read(s.compressed_file), s.key, EntryParts::for_loading);
                              if (!r.entry) std::abort();
                          }),
                median_us(2000, [&] {
                    auto r = kiln::cache::decode_entry_in_place(read(s.uncompressed_file), s.key,
                                                                EntryParts::for_loading);
                    if (!r.entry) std::abort();
                }));
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: bench_entry_size CACHE_DIR\n");
        return 2;
    }
    const fs::path dir = fs::absolute(argv[1]);
    const fs::path plain_dir = dir.string() + ".uncompressed";
    fs::remove_all(plain_dir);
    std::size_t entries = 0, stored = 0, plain = 0;
    Sample sample;
    std::size_t sample_metadata = 0;
    for (const auto& item : fs::recursive_directory_iterator(dir)) {
        if (!item.is_regular_file() || item.path().extension() != ".kiln") continue;
        const auto key = kiln::cache::Key::from_hex(item.path().stem().string());
        if (!key) continue;
        const std::string bytes = read(item.path());
        auto decoded = kiln::cache::decode_entry(bytes, *key);
        if (!decoded.entry) continue;
        kiln::cache::Entry entry = std::move(*decoded.entry);
        entry.compression = Compression::none;
        const std::string uncompressed = kiln::cache::encode_entry(entry);
        write(plain_dir / fs::relative(item.path(), dir), uncompressed);
        ++entries;
        stored += bytes.size();
        plain += uncompressed.size();
        const bool reduction =
            entry.recipe && entry.recipe->description.find("\"reduction\"") != std::string::npos;
        const std::size_t metadata = uncompressed.size() - entry.payload.size();
        if (reduction && metadata > sample_metadata) {
            sample_metadata = metadata;
            sample = {*key,
                      bytes,
                      uncompressed,
                      item.path(),
                      plain_dir / fs::relative(item.path(), dir),
                      entry.payload.size()};
        }
    }
    std::printf("%zu entries: %zu bytes stored (compressed), %zu uncompressed: %.2fx smaller\n",
                entries, stored, plain, double(plain) / double(stored));
    auto archive = [](const fs::path& from, const fs::path& to) {
        kiln::cache::Config config;
        config.dir = from;
        kiln::cache::LocalStore store(config);
        store.export_to(to);
        return fs::file_size(to);
    };
    const auto archive_compressed = archive(dir, dir.string() + ".kilnarc");
    const auto archive_plain = archive(plain_dir, plain_dir.string() + ".kilnarc");
    std::printf("archive (kiln cache export): %ju bytes compressed, %ju uncompressed: %.2fx "
                "smaller\n",
                std::uintmax_t(archive_compressed), std::uintmax_t(archive_plain),
                double(archive_plain) / double(archive_compressed));
    if (sample.cubin == 0) {
        std::printf("no reduction entry (a recipe whose description is a reduction's)\n");
        return 0;
    }
    std::printf("reduction entry %s: cubin %zu bytes; entry %zu bytes compressed (%.2fx the "
                "cubin), %zu uncompressed (%.2fx)\n",
                sample.key.hex().c_str(), sample.cubin, sample.compressed.size(),
                double(sample.compressed.size()) / double(sample.cubin), sample.uncompressed.size(),
                double(sample.uncompressed.size()) / double(sample.cubin));
    time_decoding(sample);
    return 0;
}
