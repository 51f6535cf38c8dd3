#include "compression.hpp"

#include <zstd.h>

#include <memory>
#include <stdexcept>

namespace kiln::cache::detail {

namespace {

// Level 19: an entry is compressed once, when compiled (a few milliseconds beside NVRTC's
// hundreds), and read many times; zstd decompresses every level as fast.
constexpr int kLevel = 19;

struct Dictionaries {
    ZSTD_CDict* compress = nullptr;
    ZSTD_DDict* decompress = nullptr;
};

// Built once per process, on first use; never freed (other statics may still use them at exit).
const Dictionaries& dictionaries() {
    static const Dictionaries dicts = [] {
        const std::string_view dict = zstd_dictionary_v1();
        Dictionaries made;
        // Raw content: the dictionary does not start with zstd's dictionary magic, so zstd
        // reads it as content to refer back into (ZSTD_dct_auto), and frames record no ID.
        made.compress = ZSTD_createCDict(dict.data(), dict.size(), kLevel);
        made.decompress = ZSTD_createDDict(dict.data(), dict.size());
        return made;
    }();
    return dicts;
}

struct FreeCCtx {
    void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct FreeDCtx {
    void operator()(ZSTD_DCtx* d) const { ZSTD_freeDCtx(d); }
};

} // namespace

std::string zstd_compress_v1(std::string_view input) {
    const Dictionaries& dicts = dictionaries();
    thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx(ZSTD_createCCtx());
    if (!dicts.compress || !cctx) throw std::runtime_error("cache entry: zstd: out of memory");
    std::string out(ZSTD_compressBound(input.size()), '\0');
    // Content size recorded, no checksum (the entry's hashes cover the stored bytes).
    const std::size_t size = ZSTD_compress_usingCDict(cctx.get(), out.data(), out.size(),
                                                      input.data(), input.size(), dicts.compress);
    if (ZSTD_isError(size))
        throw std::runtime_error(std::string("cache entry: zstd: ") + ZSTD_getErrorName(size));
    out.resize(size);
    return out;
}

bool zstd_decompress_v1(std::string_view frame, std::uint64_t limit, std::string& out) {
    // A zstd frame, not a skippable one, and nothing after it.
    if (frame.size() < 4) return false;
    std::uint32_t magic = 0;
    for (int i = 3; i >= 0; --i)
        magic = magic << 8 | static_cast<unsigned char>(frame[i]);
    if (magic != ZSTD_MAGICNUMBER) return false;
    if (ZSTD_findFrameCompressedSize(frame.data(), frame.size()) != frame.size()) return false;
    // The size is known, and bounded, before anything is allocated.
    const unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
    if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR || size > limit)
        return false;
    const Dictionaries& dicts = dictionaries();
    thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx(ZSTD_createDCtx());
    if (!dicts.decompress || !dctx) return false;
    out.resize(static_cast<std::size_t>(size));
    const std::size_t got = ZSTD_decompress_usingDDict(
        dctx.get(), out.data(), out.size(), frame.data(), frame.size(), dicts.decompress);
    return !ZSTD_isError(got) && got == size;
}

std::string zstd_warm_up_sample() {
    const std::string_view dict = zstd_dictionary_v1();
    static constexpr char kAlphabet[] = "abcdefghijklmnop_0123";
    std::string sample;
    std::uint32_t state = 0x9e3779b9; // xorshift32: the same bytes in every process
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        return state;
    };
    for (int run = 0; run < 16; ++run) {
        for (int k = 0; k < 96; ++k) // uneven: the alphabet's first letters twice as likely
            sample += kAlphabet[next() % 2 ? next() % 8 : next() % (sizeof kAlphabet - 1)];
        if (dict.size() > 256)
            sample += dict.substr(next() % (dict.size() - 256), 40 + next() % 120);
    }
    return sample;
}

} // namespace kiln::cache::detail
