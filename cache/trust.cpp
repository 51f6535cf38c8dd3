#include "trust.hpp"

#include "warn.hpp"

#include <atomic>

namespace kiln::cache::detail {

TrustCheck check_trust(std::string_view file, SealDomain domain, Origin origin,
                       const TrustedKeys* keys) {
    TrustCheck check;
    const auto seal = read_seal(file, domain);
    if (!seal) return check;
    if (!keys ||
        (origin == Origin::private_directory && seal->provenance == Provenance::own_compile)) {
        check.verdict = Verdict::trusted;
        return check;
    }
    // Checked when it was written here, by this user's Kiln: trusted while its signer is.
    if (origin == Origin::private_directory && seal->provenance == Provenance::verified) {
        check.signer = keys->find(seal->signer);
        check.verdict = check.signer ? Verdict::trusted : Verdict::untrusted;
        return check;
    }
    check.signer = verify_seal(file, *seal, *keys);
    check.verdict = check.signer ? Verdict::trusted : Verdict::untrusted;
    return check;
}

void warn_untrusted(const std::string& where, std::string_view what) {
    static std::atomic<bool> warned{false};
    if (warned.exchange(true)) return;
    warn("kernel cache: " + std::string(what) + " from " + where +
         " is not signed by a key in KILN_TRUSTED_KEYS and was not used (compiled here "
         "instead). Further untrusted files are not reported; `kiln cache stats` counts them "
         "and `kiln cache verify` names their signers.");
}

const char* to_string(Origin origin) {
    switch (origin) {
    case Origin::private_directory:
        return "the private cache directory";
    case Origin::shared_directory:
        return "the shared cache directory";
    case Origin::remote:
        return "the remote cache";
    case Origin::archive:
        return "the archive";
    }
    return "the cache";
}

} // namespace kiln::cache::detail
