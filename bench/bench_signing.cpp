// What signed entries cost (issue 36): verifying an entry a reader did not compile itself, by the
// entry's size, against decoding it alone; and signing one when it is stored. CPU only. Target:
// verifying adds at most 0.1 ms to an entry of up to 64 KB and 1 ms per further MB.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/signing.hpp"

#include "trust.hpp"

#include <benchmark/benchmark.h>

#include <string>

namespace {

using kiln::cache::detail::Origin;
using kiln::cache::detail::SealDomain;

const kiln::cache::SigningKey& key() {
    static const auto k = kiln::cache::SigningKey::generate("bench");
    return k;
}

const kiln::cache::TrustedKeys& keys() {
    static const auto k = kiln::cache::TrustedKeys::parse(
        kiln::cache::format_public_key(key().public_key()), "bench");
    return k;
}

kiln::cache::Entry entry_of(std::size_t payload) {
    kiln::cache::Entry entry;
    entry.key = kiln::cache::KeyBuilder().add("bench", std::uint64_t(payload)).finish();
    entry.payload.assign(payload, 'p');
    for (std::size_t i = 0; i < payload; ++i)
        entry.payload[i] = static_cast<char>(i * 2654435761u >> 24);
    entry.nvrtc_version = "13.0.88";
    entry.arch = "sm_90";
    entry.kernel_names = {"kernel"};
    return entry;
}

// decode_entry() alone: what every disk or remote hit pays, signed or not.
void BM_Entry_Decode(benchmark::State& state) {
    const auto entry = entry_of(static_cast<std::size_t>(state.range(0)));
    const std::string bytes = kiln::cache::encode_entry(entry, &key());
    for (auto _ : state)
        benchmark::DoNotOptimize(kiln::cache::decode_entry(bytes, entry.key));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}

// The check a reader with KILN_TRUSTED_KEYS adds: SHA-256 of the entry and one Ed25519 verify.
void BM_Entry_Verify(benchmark::State& state) {
    const auto entry = entry_of(static_cast<std::size_t>(state.range(0)));
    const std::string bytes = kiln::cache::encode_entry(entry, &key());
    for (auto _ : state)
        benchmark::DoNotOptimize(
            kiln::cache::detail::check_trust(bytes, SealDomain::entry, Origin::remote, &keys()));
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes.size()));
}

// The same entry written back into the private directory after that check (`verified`): what
// later processes pay for it.
void BM_Entry_CheckVerifiedWriteBack(benchmark::State& state) {
    const auto entry = entry_of(static_cast<std::size_t>(state.range(0)));
    std::string bytes = kiln::cache::encode_entry(entry, &key());
    kiln::cache::detail::set_provenance(bytes, kiln::cache::Provenance::verified);
    for (auto _ : state)
        benchmark::DoNotOptimize(kiln::cache::detail::check_trust(
            bytes, SealDomain::entry, Origin::private_directory, &keys()));
}

// What a writer with KILN_SIGNING_KEY_FILE adds to a store: encoding signed against unsigned.
void BM_Entry_EncodeSigned(benchmark::State& state) {
    const auto entry = entry_of(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state)
        benchmark::DoNotOptimize(kiln::cache::encode_entry(entry, &key()));
}

void BM_Entry_EncodeUnsigned(benchmark::State& state) {
    const auto entry = entry_of(static_cast<std::size_t>(state.range(0)));
    for (auto _ : state)
        benchmark::DoNotOptimize(kiln::cache::encode_entry(entry, nullptr));
}

} // namespace

#define KILN_SIZES ->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)
BENCHMARK(BM_Entry_Decode) KILN_SIZES;
BENCHMARK(BM_Entry_Verify) KILN_SIZES;
BENCHMARK(BM_Entry_CheckVerifiedWriteBack) KILN_SIZES;
BENCHMARK(BM_Entry_EncodeSigned) KILN_SIZES;
BENCHMARK(BM_Entry_EncodeUnsigned) KILN_SIZES;
BENCHMARK_MAIN();
