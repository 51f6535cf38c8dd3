#include "prepare_compiling.hpp"

#include "kiln/cache/memo_store.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"

#include "nvrtc_identity.hpp"

namespace kiln::detail {

void prepare_compiling() {
    // Each part separately: one that fails (it throws again, and is reported, when the call
    // that needs it runs) leaves the others done.
    try {
        // The cache settings, the cache directory's checks, a remote tier; then the lookup's
        // code run once, so the first real one is not its first execution.
        if (cache::Store* store = Compiler::global().store()) {
            store->prepare();
            // What this program used last time, read while the driver loads: its first calls
            // then read no file.
            if (const std::string& program = program_identity(); !program.empty())
                store->read_ahead(program);
            // A memo encoded and decoded in memory and a lookup of a signature no memo has: a
            // generated kernel's first call is then not the first execution of that code.
            const cache::Key none = cache::KeyBuilder().add("warm-up", "no memo").finish();
            (void)cache::decode_memo(cache::encode_memo(none, {none, "kiln_prepare", "cubin"}),
                                     none);
            (void)store->load_memo(none);
        }
    } catch (...) {
    }
    try {
        nvrtc_full_version(); // NVRTC's identity, in every key
        // A key computed once (no compile, no lookup): the first real one is then not the first
        // execution of its code.
        CompileOptions options;
        options.arch = "sm_90";
        (void)Compiler::global().key_for("warm-up", options);
    } catch (...) {
    }
}

} // namespace kiln::detail
