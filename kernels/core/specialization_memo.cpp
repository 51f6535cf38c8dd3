#include "specialization_memo.hpp"

#include "compile/nvrtc_identity.hpp"
#include "driver/driver_trace.hpp"
#include "driver/prepare_steps.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/module.hpp"
#include "kiln/settings.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>

namespace kiln::detail {

namespace {

// Bumped when what goes into a signature changes meaning.
constexpr std::uint64_t kSignatureSchema = 1;

struct IdentityState {
    std::mutex mutex;
    bool known = false;
    MemoIdentity identity;
};

IdentityState& identity_state() {
    static IdentityState state;
    return state;
}

// The identity is part of kiln::prepare(), so a first call from disk does not compute it. A
// signature computed, a memo encoded and decoded in memory and a lookup of a signature no memo
// has run that code once, so that the first real call is not its first execution.
const bool kIdentityPrepared =
    (add_prepare_step([] {
         const KernelParams params("ElementwiseKernel", "kiln_prepare", "T x", "T y");
         const std::uint64_t plan = 0;
         (void)MemoSignature("warm-up", params, {}, "sm_90")
             .text("operation", "y = x")
             .bytes("plan", &plan, sizeof plan)
             .finish();
         const cache::Key none = cache::KeyBuilder().add("warm-up", "no memo").finish();
         (void)cache::decode_memo(cache::encode_memo(none, {none, "kiln_prepare", "cubin"}), none);
         if (cache::Store* store = Compiler::global().store()) (void)store->load_memo(none);
     }),
     true);

// Whether the memo can stand in for the source: a disk cache that reads, and nothing asked of a
// compile that needs the source (saving it beside the entry; a compile-time trace, which
// Compiler::from_memo() refuses too).
bool memo_usable(const Compiler& compiler) {
    const cache::Store* store = compiler.store();
    return store && !store->config().disabled && !store->config().save_source;
}

// Write (or replace) the memo of @p signature with @p program, which holds params.name.
void remember(const cache::Key& signature, const KernelParams& params, const Program& program) {
    cache::Store* store = Compiler::global().store();
    if (store && !store->config().readonly)
        store->store_memo(signature, {program.key(), params.name, program.cubin()});
}

} // namespace

const MemoIdentity& memo_identity() {
    IdentityState& state = identity_state();
    std::lock_guard<std::mutex> lock(state.mutex);
    if (!state.known) {
        // The build id of the object this function is linked into: Kiln's code generators and
        // device headers are in it, so a different Kiln build is a different identity.
        state.identity = {loaded_build_id(reinterpret_cast<const void*>(&memo_identity)),
                          nvrtc_full_version()};
        state.known = true;
    }
    return state.identity;
}

void set_memo_identity_for_testing(MemoIdentity identity) {
    IdentityState& state = identity_state();
    std::lock_guard<std::mutex> lock(state.mutex);
    state.identity = std::move(identity);
    state.known = true;
}

MemoSignature::MemoSignature(const char* front_end, const KernelParams& params,
                             const std::vector<std::string>& nvrtc_options,
                             const std::string& arch) {
    const MemoIdentity& identity = memo_identity();
    m_key.add("memo-schema", kSignatureSchema);
    m_key.add("kiln", identity.kiln);
    m_key.add("nvrtc", identity.nvrtc);
    m_key.add("front-end", front_end);
    m_key.add("arch", arch);
    // The one default of the compile that the environment sets (the key holds it as an option).
    m_key.add("lineinfo", std::uint64_t{settings::flag(Variable::lineinfo)});
    m_key.add("name", params.name);
    m_key.add("in", params.in_spec);
    m_key.add("out", params.out_spec);
    m_key.add("options", std::uint64_t{nvrtc_options.size()});
    for (const auto& option : nvrtc_options)
        m_key.add("option", option);
}

MemoSignature& MemoSignature::text(std::string_view field, std::string_view value) {
    m_key.add(field, value);
    return *this;
}

MemoSignature& MemoSignature::number(std::string_view field, std::uint64_t value) {
    m_key.add(field, value);
    return *this;
}

MemoSignature& MemoSignature::bytes(std::string_view field, const void* data, std::size_t size) {
    m_key.add(field, std::string_view(static_cast<const char*>(data), size));
    return *this;
}

std::optional<cache::Key> MemoSignature::finish() {
    if (memo_identity().kiln.empty()) return std::nullopt;
    const cache::Key key = m_key.finish();
    trace_mark("memo signature");
    return key;
}

CompiledSpecialization compile_memoized(const KernelParams& params,
                                        const std::optional<cache::Key>& signature,
                                        const std::vector<std::string>& nvrtc_options,
                                        const std::string& arch,
                                        const std::function<GeneratedSource()>& generate,
                                        const std::function<std::string()>& describe) {
    Compiler& compiler = Compiler::global();
    const bool memo = signature && memo_usable(compiler);
    if (memo) {
        const auto start = std::chrono::steady_clock::now();
        auto found = compiler.store()->load_memo(*signature);
        trace_mark("memo read");
        if (found && found->name == params.name) {
            const double read_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count();
            if (auto program = compiler.from_memo(std::move(*found), arch, read_ms)) {
                CompiledSpecialization hit;
                hit.program = std::move(program);
                hit.options.arch = arch;
                hit.options.options = nvrtc_options;
                hit.memo = signature;
                return hit;
            }
        }
    }
    CompiledSpecialization compiled =
        compile_specialization(params, generate(), nvrtc_options, arch, describe());
    if (memo) remember(*signature, params, *compiled.program);
    return compiled;
}

Function load_memoized(const KernelParams& params, const CompiledSpecialization& compiled,
                       const std::function<CompiledSpecialization()>& full) {
    if (!compiled.memo) return load_specialization(params, compiled);
    try {
        return load_specialization(params, compiled);
    } catch (const Error&) {
        // The memo's cubin has no source to recompile it: the full path reads the entry (with
        // the source to recompile it when the driver rejects that too) or reports the error as a
        // call without memos would; what it loads replaces the memo.
        Compiler::global().forget(compiled.program->key());
        const CompiledSpecialization again = full();
        // The module's program: a recompile of a rejected entry replaces the one it was given.
        const auto module = Module::load(again.program, again.options);
        Function function = module->function(params.name);
        remember(*compiled.memo, params, *module->program());
        return function;
    }
}

} // namespace kiln::detail
