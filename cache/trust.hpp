#pragma once
// What a reader trusts (docs/architecture.md, "What the cache trusts"). Without trusted keys
// (KILN_TRUSTED_KEYS unset) every well-formed file is used, as before signing existed. With them,
// a file is used only when it was compiled by this user into this user's private directory, or
// when one of the trusted keys signed it: everything read from a shared directory, the remote
// tier or an archive, and whatever reached the private directory from elsewhere, needs a
// signature. Anything else is untrusted: a miss, counted, with one warning per process. What a
// reader with trusted keys writes into its private directory after checking the signature is
// marked `verified`: later processes use it while its signer is trusted, without the check.

#include "seal.hpp"

#include "kiln/cache/signing.hpp"

#include <string>
#include <string_view>

namespace kiln::cache::detail {

/// Where a file was read from.
enum class Origin { private_directory, shared_directory, remote, archive };

/// What a reader may do with a file.
enum class Verdict {
    trusted,   ///< use it
    untrusted, ///< a miss: not signed by a trusted key, and not this user's own compile
    damaged,   ///< no valid seal: damage, as a bad checksum is
};

struct TrustCheck {
    Verdict verdict = Verdict::damaged;
    /// The trusted key that signed it, when that is why it is trusted.
    const PublicKey* signer = nullptr;
};

/// Judge @p file (whose seal is of @p domain) read from @p origin; @p keys null means no trusted
/// keys are set.
TrustCheck check_trust(std::string_view file, SealDomain domain, Origin origin,
                       const TrustedKeys* keys);

/// Warn, once per process, that an untrusted file from @p where was not used.
void warn_untrusted(const std::string& where, std::string_view what);

/// "the shared directory", "the remote cache"… for messages.
const char* to_string(Origin origin);

} // namespace kiln::cache::detail
