#pragma once
// The memo of a generated kernel: a fresh process's first call finds its cubin on disk without
// generating the source. A front end hashes everything that decides the source it would generate
// (its definition's text, options, plan, architecture) with Kiln's build identity and NVRTC's into
// a signature; the memo file of that signature (kiln/cache/memo_store.hpp) holds the entry key,
// kernel name and cubin that the source led to last time, so the first call reads one file. Any
// doubt (no memo, a damaged or planted one, a cubin without the kernel, one the driver rejects)
// takes the full path: generate, key, compile or read, and write the memo again.

#include "kernel_params.hpp"
#include "kiln/cache/key.hpp"
#include "source_writer.hpp"
#include "specialization.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::detail {

/// What a memo's signature is made of besides the call: Kiln's build (the GNU build id of the
/// object Kiln's code is linked into, which covers its code generators and embedded device
/// headers) and NVRTC's (nvrtc_full_version()). Computed once per process; an empty `kiln`
/// (no build id) turns memos off.
struct MemoIdentity {
    std::string kiln, nvrtc;
};
const MemoIdentity& memo_identity();
/// Replaces the process's identity (tests: a memo from another build must miss).
void set_memo_identity_for_testing(MemoIdentity identity);

/// Builds the signature of one call of a generated kernel: the front end, the kernel's name and
/// parameter specs, its NVRTC options, the architecture and the identity come first; the front
/// end adds its definition's text and its plan's bytes.
class MemoSignature {
  public:
    MemoSignature(const char* front_end, const KernelParams& params,
                  const std::vector<std::string>& nvrtc_options, const std::string& arch);
    MemoSignature& text(std::string_view field, std::string_view value);
    MemoSignature& number(std::string_view field, std::uint64_t value);
    MemoSignature& bytes(std::string_view field, const void* data, std::size_t size);
    /// The signature; nullopt when memos are off for this process (no build identity).
    std::optional<cache::Key> finish();

  private:
    cache::KeyBuilder m_key;
};

/// compile_specialization(), through the memo of @p signature when there is one: on a memo hit
/// nothing is generated or read but the memo (Program::source() is empty; the result's `memo`
/// holds the signature); on a miss the source is generated (@p generate), compiled or read as
/// usual, and the memo written. @p describe is called only when the source is.
CompiledSpecialization compile_memoized(const KernelParams& params,
                                        const std::optional<cache::Key>& signature,
                                        const std::vector<std::string>& nvrtc_options,
                                        const std::string& arch,
                                        const std::function<GeneratedSource()>& generate,
                                        const std::function<std::string()>& describe);

/// load_specialization(), with a fall back for a program read through a memo that the driver
/// rejects (it has no source to recompile): @p full compiles it the full way, which recompiles
/// a rejected entry, and what it loads replaces the memo.
Function load_memoized(const KernelParams& params, const CompiledSpecialization& compiled,
                       const std::function<CompiledSpecialization()>& full);

} // namespace kiln::detail
