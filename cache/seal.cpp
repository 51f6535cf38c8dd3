#include "seal.hpp"

#include "bytes.hpp"

#include <xxhash.h>

#include <cstring>

namespace kiln::cache::detail {

namespace {

constexpr std::string_view kSealMagic = "KILNSEAL";
constexpr std::string_view kSignedPrefix{"KILN signed file v1\0", 20};
constexpr std::size_t kHashedSealSize = kSealSize - 8;
constexpr std::uint32_t kUnsigned = 0;
constexpr std::uint32_t kEd25519 = 1;

std::string signed_message(std::string_view body, SealDomain domain) {
    const Digest digest = sha256({body});
    std::string message(kSignedPrefix);
    ByteWriter(message).u32(static_cast<std::uint32_t>(domain));
    message.append(reinterpret_cast<const char*>(digest.data()), digest.size());
    return message;
}

std::string encode_seal(const Seal& seal) {
    std::string out;
    out.reserve(kSealSize);
    ByteWriter writer(out);
    writer.raw(kSealMagic);
    writer.u32(static_cast<std::uint32_t>(seal.domain));
    writer.u32(static_cast<std::uint32_t>(seal.provenance));
    writer.u32(seal.is_signed ? kEd25519 : kUnsigned);
    writer.u32(0);
    writer.raw({reinterpret_cast<const char*>(seal.signer.data()), seal.signer.size()});
    writer.raw({reinterpret_cast<const char*>(seal.signature.data()), seal.signature.size()});
    writer.u64(XXH3_64bits(out.data(), out.size()));
    return out;
}

} // namespace

void append_seal(std::string& file, SealDomain domain, Provenance provenance,
                 const SigningKey* key) {
    Seal seal;
    seal.domain = domain;
    seal.provenance = provenance;
    if (key) {
        seal.is_signed = true;
        seal.signer = key->public_key().bytes;
        seal.signature = key->sign(signed_message(file, domain));
    }
    file += encode_seal(seal);
}

std::optional<Seal> read_seal(std::string_view file, SealDomain domain) {
    if (file.size() < kSealSize) return std::nullopt;
    const std::string_view bytes = file.substr(file.size() - kSealSize);
    ByteReader in(bytes);
    if (in.raw(kSealMagic.size()) != kSealMagic) return std::nullopt;
    Seal seal;
    const std::uint32_t domain_tag = in.u32();
    const std::uint32_t provenance = in.u32();
    const std::uint32_t signer_tag = in.u32();
    const std::uint32_t reserved = in.u32();
    const std::string_view signer = in.raw(seal.signer.size());
    const std::string_view signature = in.raw(seal.signature.size());
    const std::uint64_t hash = in.u64();
    if (!in.ok() || hash != XXH3_64bits(bytes.data(), kHashedSealSize) ||
        domain_tag != static_cast<std::uint32_t>(domain) || reserved != 0 ||
        provenance < static_cast<std::uint32_t>(Provenance::own_compile) ||
        provenance > static_cast<std::uint32_t>(Provenance::verified) ||
        (signer_tag != kUnsigned && signer_tag != kEd25519))
        return std::nullopt;
    seal.domain = domain;
    seal.provenance = static_cast<Provenance>(provenance);
    seal.is_signed = signer_tag == kEd25519;
    std::memcpy(seal.signer.data(), signer.data(), seal.signer.size());
    std::memcpy(seal.signature.data(), signature.data(), seal.signature.size());
    // Canonical: an unsigned seal carries no key or signature bytes.
    if (!seal.is_signed && (seal.signer != PublicKeyBytes{} || seal.signature != SignatureBytes{} ||
                            seal.provenance == Provenance::verified))
        return std::nullopt;
    return seal;
}

bool set_provenance(std::string& file, Provenance provenance) {
    if (file.size() < kSealSize) return false;
    const std::string_view tail = std::string_view(file).substr(file.size() - kSealSize);
    ByteReader in(tail);
    in.raw(kSealMagic.size());
    const auto domain = static_cast<SealDomain>(in.u32());
    auto seal = read_seal(file, domain);
    if (!seal || (provenance == Provenance::verified && !seal->is_signed)) return false;
    seal->provenance = provenance;
    file.replace(file.size() - kSealSize, kSealSize, encode_seal(*seal));
    return true;
}

bool reseal(std::string& file, SealDomain domain, const SigningKey& key) {
    const auto seal = read_seal(file, domain);
    if (!seal) return false;
    file.resize(file.size() - kSealSize);
    append_seal(file, domain, seal->provenance, &key);
    return true;
}

const PublicKey* verify_seal(std::string_view file, const Seal& seal, const TrustedKeys& keys) {
    if (!seal.is_signed || file.size() < kSealSize || !keys.find(seal.signer)) return nullptr;
    const std::string_view body = file.substr(0, file.size() - kSealSize);
    return keys.verify(seal.signer, signed_message(body, seal.domain), seal.signature);
}

} // namespace kiln::cache::detail
