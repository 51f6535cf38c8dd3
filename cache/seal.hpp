#pragma once
// The seal that ends every file Kiln reads back from a cache (entries, memos, read-ahead lists,
// tuning records): where the file came from and, when its writer had a signing key, an Ed25519
// signature over everything before the seal. A reader with trusted keys (trust.hpp) uses a file
// that did not come from its own compile into its own private directory only when one of those
// keys signed it.
//
//   seal        ::= magic domain provenance signer_tag reserved signer signature seal_hash
//                                                      (kSealSize = 128 bytes, at the file's end)
//   magic       ::= "KILNSEAL"                         8 bytes
//   domain      ::= u32                                1 entry, 2 memo, 3 read-ahead, 4 tuning
//   provenance  ::= u32                                1 compiled by this user into this private
//                                                      directory, 2 anything else, 3 anything
//                                                      else whose signature this user's Kiln
//                                                      checked before writing it here (signed
//                                                      seals only)
//   signer_tag  ::= u32                                0 unsigned, 1 Ed25519
//   reserved    ::= u32                                0
//   signer      ::= 32 bytes                           the public key (zeros when unsigned)
//   signature   ::= 64 bytes                           Ed25519 over signed_message (zeros when
//                                                      unsigned)
//   seal_hash   ::= u64                                XXH3-64 of the seal's first 120 bytes
//   signed_message ::= "KILN signed file v1" 0x00 domain SHA-256(every byte before the seal)
//
// The signature covers the domain (a signed memo is no entry) and every byte before the seal,
// which for an entry includes its key; it does not cover the provenance, which a write-back into
// the private directory rewrites (set_provenance()). The seal's own hash catches a flipped bit in
// it, as the entry's hashes do elsewhere.

#include "kiln/cache/entry.hpp"
#include "kiln/cache/signing.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::cache::detail {

inline constexpr std::size_t kSealSize = kEntrySealSize;

enum class SealDomain : std::uint32_t { entry = 1, memo = 2, read_ahead = 3, tuning = 4 };

struct Seal {
    SealDomain domain = SealDomain::entry;
    Provenance provenance = Provenance::imported;
    bool is_signed = false;
    PublicKeyBytes signer{};
    SignatureBytes signature{};
};

/// Append a seal to @p file, signed over its bytes so far when @p key is given.
void append_seal(std::string& file, SealDomain domain, Provenance provenance,
                 const SigningKey* key);
/// The seal that ends @p file, when it is a well-formed one of @p domain; nullopt otherwise
/// (too short, another domain, a flipped bit, a tag with no meaning).
std::optional<Seal> read_seal(std::string_view file, SealDomain domain);
/// Sign @p file again with @p key, keeping its provenance (an export vouching for the
/// exporter's own compiles). False when it has no valid seal of @p domain.
bool reseal(std::string& file, SealDomain domain, const SigningKey& key);
/// Rewrite the provenance in the seal that ends @p file. False when it has no valid seal (or
/// `verified` is asked of an unsigned one).
bool set_provenance(std::string& file, Provenance provenance);
/// The trusted key whose signature the seal carries over @p file's body, or nullptr (unsigned,
/// signed by an untrusted key, or a signature that does not verify).
const PublicKey* verify_seal(std::string_view file, const Seal& seal, const TrustedKeys& keys);

} // namespace kiln::cache::detail
