#include "specialization_memo.hpp"

#include "compile/nvrtc_identity.hpp"
#include "driver/driver_trace.hpp"
#include "driver/prepare_steps.hpp"
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
// signature computed once runs that code, so that the first real call is not its first execution.
const bool kIdentityPrepared =
    (add_prepare_step([] {
         const KernelParams params("ElementwiseKernel", "kiln_prepare", "T x", "T y");
         const std::uint64_t plan = 0;
         (void)MemoSignature("warm-up", params, {}, "sm_90")
             .text("operation", "y = x")
             .bytes("plan", &plan, sizeof plan)
             .finish();
     }),
     true);

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
    CompiledSpecialization compiled;
    const GeneratedProgram found =
        Compiler::global().compile(GeneratedKernel{signature, params.name, arch}, [&] {
            compiled = compile_specialization(params, generate(), nvrtc_options, arch, describe());
            return compiled.program;
        });
    if (found.from_memo) {
        compiled.program = found.program;
        compiled.options.arch = arch;
        compiled.options.options = nvrtc_options;
        compiled.memo = signature;
    }
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
        // call without memos would; the module's program (a recompile of a rejected entry
        // replaces the one it was given) replaces the memo.
        std::shared_ptr<const Module> module;
        Compiler::global().compile(
            GeneratedKernel{compiled.memo, params.name, compiled.options.arch},
            [&] {
                const CompiledSpecialization again = full();
                module = Module::load(again.program, again.options);
                return module->program();
            },
            compiled.program.get());
        return module->function(params.name);
    }
}

} // namespace kiln::detail
