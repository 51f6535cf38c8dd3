// The remote tier with trusted keys, over a server whose every value an attacker chooses: an
// in-memory backend (the tier's interface, backend.hpp) serving forged, unsigned, swapped and
// altered values mixed with genuine ones. 10^5 values, none of the forged loaded. No NVRTC.

#include "../cache_test_util.hpp"

#include "kiln/cache/entry.hpp"
#include "kiln/cache/signing.hpp"

#include "remote/backend.hpp"
#include "remote/tier.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace kiln::test;
using kiln::cache::Provenance;
using kiln::cache::SigningKey;
using kiln::cache::TrustedKeys;
using namespace kiln::cache::remote;

namespace {

// A server holding one value, whatever key is asked: the test sets it before each lookup.
class PlantedServer : public Backend {
  public:
    std::string value;
    Result<std::optional<std::string>> get(std::string_view, const Deadline& deadline,
                                           const SizeGate& gate) override {
        if (!gate(value.size(), deadline.reply_by())) return Failure{Failure::Kind::too_large};
        return std::optional<std::string>(value);
    }
    Result<bool> put(std::string_view, std::string_view, const PutOptions&,
                     const Deadline&) override {
        return true;
    }
    Result<bool> remove(std::string_view, const Deadline&) override { return true; }
    Result<bool> claim(std::string_view, std::string_view, std::chrono::milliseconds,
                       const Deadline&) override {
        return true;
    }
    Result<bool> renew(std::string_view, std::string_view, std::chrono::milliseconds,
                       const Deadline&) override {
        return true;
    }
    Result<bool> release(std::string_view, std::string_view, const Deadline&) override {
        return true;
    }
    Result<Pong> ping(const Deadline&) override { return Pong{}; }
    Result<ServerInfo> info(const Deadline&) override { return ServerInfo{}; }
    Result<std::uint64_t> count_keys(std::string_view, const Deadline&) override {
        return std::uint64_t{0};
    }
    void reset() noexcept override {}
};

kiln::cache::RemoteConfig read_only() {
    auto config = kiln::cache::RemoteConfig::parse_url("redis://127.0.0.1:1/0", "test");
    config.mode = kiln::cache::RemoteMode::read_only; // nothing published, nothing replaced
    return config;
}

} // namespace

TEST(RemoteTrust, NoForgedOrSwappedValueIsEverLoaded) {
    const auto ci = SigningKey::generate("ci");
    const auto forger = SigningKey::generate("forger");
    auto keys = std::make_shared<const TrustedKeys>(
        TrustedKeys::parse(kiln::cache::format_public_key(ci.public_key()), "test"));
    auto backend = std::make_unique<PlantedServer>();
    PlantedServer& server = *backend;
    Tier tier(read_only(), std::move(backend), keys);
    constexpr int kKeys = 16;
    constexpr std::size_t kSeal = kiln::cache::kEntrySealSize;
    std::vector<kiln::cache::Entry> entries;
    std::vector<std::string> genuine, forged;
    for (int i = 0; i < kKeys; ++i) {
        auto entry = make_entry(key_of("soak " + std::to_string(i)), 2048);
        entry.provenance = Provenance::own_compile;
        entries.push_back(entry);
        genuine.push_back(kiln::cache::encode_entry(entry, &ci));
        entry.payload[0] = static_cast<char>(entry.payload[0] ^ 0x40); // other code, same key
        forged.push_back(kiln::cache::encode_entry(entry, &forger));
    }
    std::mt19937_64 random(7);
    constexpr int kValues = 100000;
    int loaded_forged = 0, loaded_genuine = 0, served_genuine = 0;
    for (int n = 0; n < kValues; ++n) {
        const int i = static_cast<int>(random() % kKeys);
        switch (random() % 6) {
        case 0: // signed by a key nobody trusts
            server.value = forged[i];
            break;
        case 1: // unsigned, claiming to be the caller's own compile
            server.value = kiln::cache::encode_entry(entries[i], nullptr);
            break;
        case 2: // the genuine seal on forged bytes
            server.value = forged[i];
            server.value.replace(server.value.size() - kSeal, kSeal,
                                 genuine[i].substr(genuine[i].size() - kSeal));
            break;
        case 3: // another key's genuine entry
            server.value = genuine[(i + 1) % kKeys];
            break;
        case 4: // one payload byte of the genuine entry changed
            server.value = genuine[i];
            server.value[server.value.size() - kSeal - 1 - random() % 2048] ^= 0x01;
            break;
        default:
            server.value = genuine[i];
            ++served_genuine;
            break;
        }
        auto hit = tier.load(entries[i].key, nullptr);
        if (!hit) continue;
        if (server.value == genuine[i] && hit->payload == entries[i].payload)
            ++loaded_genuine;
        else
            ++loaded_forged;
    }
    EXPECT_EQ(loaded_forged, 0);
    EXPECT_EQ(loaded_genuine, served_genuine);
    const auto stats = tier.stats();
    EXPECT_EQ(stats.hits, static_cast<std::uint64_t>(served_genuine));
    EXPECT_GT(stats.untrusted, 0u);
}
