#include "kiln/raw_kernel.hpp"

#include "core/device_headers.hpp"
#include "core/minimal_front_end.hpp"
#include "driver/driver_trace.hpp"
#include "driver/per_context_cache.hpp"
#include "kiln/device.hpp"
#include "shared_registry.hpp"

#include <optional>
#include <utility>

namespace kiln {

struct RawModule::State {
    std::string source;
    CompileOptions options;
    /// Whether NVRTC's -minimal front end fits the source and options (minimal_front_end.hpp):
    /// added then, as for generated kernels (the same cubin, a faster compile).
    bool minimal = false;
    std::optional<std::string> image; // set for modules read from a file
    std::string description;
    detail::PerContextCache<std::shared_ptr<const Module>> modules;

    // The program for @p arch (when the options name none); @p used: its options.
    std::shared_ptr<const Program> compile_for(const std::string& arch,
                                               CompileOptions* used = nullptr) {
        CompileOptions resolved = options;
        if (resolved.arch.empty()) resolved.arch = arch;
        return detail::compile_front_end_fallback(
            resolved, minimal,
            [&](const CompileOptions& o) { return Compiler::global().compile(source, o); }, used);
    }

    const std::shared_ptr<const Module>& module_in(CUcontext context) {
        return modules.get(context, {}, [&] {
            if (image) return Module::load(*image, description);
            CompileOptions used;
            auto program = compile_for(Device::current().arch(), &used);
            return shared_module(std::move(program), used, context);
        });
    }

    // Modules built from the same program share one CUmodule per context, however many
    // RawModule objects ask for it.
    static std::shared_ptr<const Module> shared_module(std::shared_ptr<const Program> program,
                                                       const CompileOptions& options,
                                                       CUcontext context) {
        static detail::SharedRegistry<std::pair<cache::Key, CUcontext>, const Module> modules;
        return modules.get({program->key(), context},
                           [&] { return Module::load(std::move(program), options); });
    }
};

struct RawKernel::State {
    std::shared_ptr<RawModule::State> module;
    std::string name;
    detail::PerContextCache<Function> functions;
};

RawModule::RawModule(std::shared_ptr<State> state)
    : m_state(std::move(state)) {}

RawModule::RawModule(std::string source, CompileOptions options,
                     std::vector<std::string> name_expressions)
    : m_state(std::make_shared<State>()) {
    m_state->source = std::move(source);
    m_state->options = std::move(options);
    detail::add_cupy_headers(m_state->source, m_state->options);
    auto& names = m_state->options.name_expressions;
    names.insert(names.end(), name_expressions.begin(), name_expressions.end());
    m_state->minimal = detail::raw_source_fits_minimal_front_end(m_state->source, m_state->options);
    m_state->description = "a RawModule";
}

RawModule RawModule::from_file(const std::string& path) {
    auto state = std::make_shared<State>();
    // Read and check now so a bad path fails at construction, not at the first launch.
    state->image = Module::read_image_file(path);
    state->description = "'" + path + "'";
    return RawModule(std::move(state));
}

RawKernel RawModule::get_function(const std::string& name) const {
    return RawKernel(m_state, name);
}

std::shared_ptr<const Program> RawModule::compile() const {
    if (m_state->image) return nullptr;
    const std::string arch =
        m_state->options.arch.empty() ? Device::current().arch() : m_state->options.arch;
    return m_state->compile_for(arch);
}

std::shared_ptr<const Module> RawModule::module() const {
    return m_state->module_in(detail::current_context());
}

DeviceGlobal RawModule::get_global(const std::string& name) const {
    return module()->global(name);
}

RawKernel::RawKernel(std::shared_ptr<RawModule::State> module, std::string name)
    : m_state(std::make_shared<State>()) {
    m_state->module = std::move(module);
    m_state->name = std::move(name);
}

RawKernel::RawKernel(std::string source, std::string name, CompileOptions options)
    : RawKernel(RawModule(std::move(source), std::move(options)).m_state, std::move(name)) {
    detail::trace_mark("RawKernel made");
}

std::shared_ptr<const Program> RawKernel::compile() const {
    return RawModule(m_state->module).compile();
}

const Function& RawKernel::function() const {
    const CUcontext context = detail::current_context();
    return m_state->functions.get(
        context, {}, [&] { return m_state->module->module_in(context)->function(m_state->name); });
}

const std::string& RawKernel::name() const noexcept {
    return m_state->name;
}

} // namespace kiln
