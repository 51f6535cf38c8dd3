#include "kiln/module.hpp"
#include "context_priming.hpp"
#include "module_preload.hpp"

#include "driver/activity_hook.hpp"
#include "driver/driver.hpp"
#include "driver/hooks.hpp"
#include "kiln/cache/cubin_symbols.hpp"
#include "kiln/device.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>

namespace kiln {

namespace {

// The context priming (context_priming.hpp) runs when Kiln makes a context, in every program that
// loads modules: driver/ calls it through its hook.
const bool kWarmUpRegistered = (detail::set_context_made_hook(&detail::prime_new_context), true);

bool is_elf(const std::string& image) {
    return image.size() >= 4 && image.compare(0, 4,
                                              "\x7f"
                                              "ELF") == 0;
}

bool is_fatbin(const std::string& image) {
    // Fatbin images start with the magic 0xBA55ED50 (little-endian).
    return image.size() >= 4 && static_cast<unsigned char>(image[0]) == 0x50 &&
           static_cast<unsigned char>(image[1]) == 0xED &&
           static_cast<unsigned char>(image[2]) == 0x55 &&
           static_cast<unsigned char>(image[3]) == 0xBA;
}

bool is_ptx(const std::string& image) {
    return image.find(".version") != std::string::npos &&
           image.find(".target") != std::string::npos && image.find('\0') == std::string::npos;
}

bool rejected_image(CUresult result) {
    return result == CUDA_ERROR_INVALID_IMAGE || result == CUDA_ERROR_NO_BINARY_FOR_GPU ||
           result == CUDA_ERROR_INVALID_PTX || result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
           result == CUDA_ERROR_INVALID_SOURCE || result == CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
}

// Load an image; returns the driver's result instead of throwing so callers can retry.
// Drivers before CUDA 12.3 refuse a module load while a stream is captured in global mode
// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, a CaptureError): the call says how to avoid it.
constexpr const char* kLoadCall =
    "cuModuleLoadDataEx(module, image) (a kernel's first call in this context loads its module; "
    "under a graph capture on drivers before CUDA 12.3, make that call once before the capture)";

CUresult try_load(const std::string& image, CUcontext context, CUmodule* module,
                  std::string* error_log) {
    // Loaded when the context was made, from the cubins the cache read ahead.
    if ((*module = detail::take_preloaded_module(context, image))) {
        if (error_log) error_log->clear();
        return CUDA_SUCCESS;
    }
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    // NOLINTNEXTLINE(performance-no-int-to-ptr): JIT option values carry integers as void*
    void* values[] = {log, reinterpret_cast<void*>(sizeof log)};
    const CUresult result =
        detail::driver().cuModuleLoadDataEx(module, image.c_str(), 2, options, values);
    if (error_log) *error_log = log;
    return result;
}

// What a Function checks launches against, per device: read once per process, not on every
// module's first function.
struct DeviceLimits {
    int max_block_threads = 0, max_block[3] = {}, max_grid[3] = {};
    int max_shared_optin = 0, multiprocessors = 0;
};

const DeviceLimits& device_limits(CUdevice device) {
    static std::mutex mutex;
    static std::map<CUdevice, std::unique_ptr<const DeviceLimits>> known; // stable addresses
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = known[device];
    if (slot) return *slot;
    auto limits = std::make_unique<DeviceLimits>();
    const CUdevice_attribute dims[] = {
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
    for (int i = 0; i < 3; ++i) {
        KILN_CU(cuDeviceGetAttribute(&limits->max_block[i], dims[i], device));
        KILN_CU(cuDeviceGetAttribute(&limits->max_grid[i], dims[i + 3], device));
    }
    KILN_CU(cuDeviceGetAttribute(&limits->max_block_threads,
                                 CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, device));
    KILN_CU(cuDeviceGetAttribute(&limits->max_shared_optin,
                                 CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device));
    KILN_CU(cuDeviceGetAttribute(&limits->multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                 device));
    slot = std::move(limits);
    return *slot;
}

} // namespace

std::shared_ptr<const Module> Module::load(const std::string& image, std::string description) {
    if (!is_elf(image) && !is_fatbin(image) && !is_ptx(image))
        throw ArgumentError(description + " is not a cubin, fatbin or PTX image");
    CUcontext context = detail::current_context();
    CUmodule module = nullptr;
    std::string log;
    const CUresult result = try_load(image, context, &module, &log);
    if (result != CUDA_SUCCESS) {
        if (rejected_image(result))
            throw ArgumentError("the driver rejected " + description +
                                (log.empty() ? std::string() : ": " + log) +
                                " (is it built for this GPU's architecture?)");
        detail::throw_cuda_error(result, kLoadCall, __FILE__, __LINE__);
    }
    return std::shared_ptr<const Module>(new Module(module, context, std::move(description)));
}

std::shared_ptr<const Module> Module::load(std::shared_ptr<const Program> program,
                                           const CompileOptions& options, Compiler& compiler) {
    CUcontext context = detail::current_context();
    CUmodule module = nullptr;
    std::string log;
    CUresult result = try_load(program->cubin(), context, &module, &log);
    // A program read through a memo has no source to recompile: its caller falls back to the
    // full path, which finds the same entry and recompiles it here.
    if (result != CUDA_SUCCESS && rejected_image(result) &&
        program->origin() == ProgramOrigin::disk_cache && !program->source().empty()) {
        // A cached cubin the driver rejects is a damaged entry, not a user error.
        program = compiler.recompile(*program, options);
        result = try_load(program->cubin(), context, &module, &log);
    }
    if (result != CUDA_SUCCESS) {
        if (rejected_image(result))
            throw ArgumentError("the driver rejected the cubin compiled for " + program->arch() +
                                (log.empty() ? std::string() : ": " + log) +
                                ": does the architecture match this GPU (" +
                                Device::current().arch() + ")?");
        detail::throw_cuda_error(result, kLoadCall, __FILE__, __LINE__);
    }
    auto loaded =
        std::shared_ptr<Module>(new Module(module, context, "program " + program->key().hex()));
    loaded->m_program = std::move(program);
    return loaded;
}

std::string Module::read_image_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ArgumentError("cannot open module file '" + path + "'");
    std::string image(std::istreambuf_iterator<char>(in), {});
    if (image.empty()) throw ArgumentError("module file '" + path + "' is empty");
    if (!is_elf(image) && !is_fatbin(image) && !is_ptx(image))
        throw ArgumentError("'" + path + "' is not a cubin, fatbin or PTX file");
    return image;
}

std::shared_ptr<const Module> Module::load_file(const std::string& path) {
    return load(read_image_file(path), "'" + path + "'");
}

Module::~Module() {
    if (m_module) detail::driver().cuModuleUnload(m_module); // never throws from a destructor
}

std::vector<std::string> Module::kernel_names() const {
    unsigned count = 0;
    KILN_CU(cuModuleGetFunctionCount(&count, m_module));
    std::vector<CUfunction> functions(count);
    if (count) KILN_CU(cuModuleEnumerateFunctions(functions.data(), count, m_module));
    std::vector<std::string> names;
    for (CUfunction f : functions) {
        const char* name = nullptr;
        KILN_CU(cuFuncGetName(&name, f));
        names.emplace_back(name ? name : "?");
    }
    return names;
}

Function Module::function(const std::string& name) const {
    std::string lowered = name;
    if (m_program)
        if (auto found = m_program->lowered_name(name)) lowered = *found;
    CUfunction function = nullptr;
    const CUresult result =
        detail::driver().cuModuleGetFunction(&function, m_module, lowered.c_str());
    if (result == CUDA_ERROR_NOT_FOUND) {
        const std::vector<std::string> names = kernel_names();
        if (std::find(names.begin(), names.end(), lowered) != names.end())
            // The driver lists the kernel but cannot load it: with lazy loading that is how a
            // relocatable cubin's unresolved references (device-side launches, extern device
            // functions) show.
            throw ArgumentError(
                "kernel '" + name + "' is in " + m_description +
                " but the driver could not load it: its code refers to symbols the module does "
                "not define. Relocatable device code must be linked first: Kiln links what it "
                "compiles with -dc or -rdc=true (with the device runtime and "
                "CompileOptions::link_inputs); link a relocatable cubin made elsewhere with "
                "nvJitLink or nvcc -dlink before loading it");
        std::ostringstream message;
        message << "no kernel named '" << name << "' in " << m_description << "; it has:";
        for (const auto& k : names)
            message << ' ' << k;
        message << ". Mark kernels extern \"C\", or pass templates and overloads as name "
                   "expressions";
        throw ArgumentError(message.str());
    }
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "cuModuleGetFunction(function, module, name)", __FILE__,
                                 __LINE__);

    auto state = std::make_shared<Function::State>();
    state->module = shared_from_this();
    state->function = function;
    state->name = name;
    // The cubin says what the parameters are (the driver reads the same records); without it (a
    // fatbin, PTX, an unknown layout) the driver is asked until it refuses, which costs it about
    // 30 us.
    if (auto known =
            m_program ? cache::cubin_parameter_sizes(m_program->cubin(), lowered) : std::nullopt) {
        state->parameter_sizes = std::move(*known);
    } else {
        for (unsigned i = 0;; ++i) {
            std::size_t offset = 0, size = 0;
            if (detail::driver().cuFuncGetParamInfo(function, i, &offset, &size) != CUDA_SUCCESS)
                break;
            state->parameter_sizes.push_back(size);
        }
    }
    CUdevice device = 0;
    KILN_CU(cuCtxGetDevice(&device));
    state->device = static_cast<int>(device);
    const DeviceLimits& limits = device_limits(device);
    state->max_block_threads = limits.max_block_threads;
    for (int i = 0; i < 3; ++i) {
        state->max_block[i] = limits.max_block[i];
        state->max_grid[i] = limits.max_grid[i];
    }
    state->max_shared_optin = limits.max_shared_optin;
    state->multiprocessors = limits.multiprocessors;
    return Function(std::move(state));
}

DeviceGlobal Module::global(const std::string& name) const {
    std::vector<std::string> candidates{name};
    if (m_program) {
        // A name expression ("&table" or "table") stands for its lowered name.
        for (const std::string& expression : {name, "&" + name})
            if (auto lowered = m_program->lowered_name(expression))
                candidates.insert(candidates.begin(), *lowered);
    }
    for (const auto& symbol : candidates) {
        CUdeviceptr pointer = 0;
        std::size_t bytes = 0;
        const CUresult result =
            detail::driver().cuModuleGetGlobal(&pointer, &bytes, m_module, symbol.c_str());
        if (result == CUDA_SUCCESS) return DeviceGlobal(shared_from_this(), name, pointer, bytes);
        if (result != CUDA_ERROR_NOT_FOUND)
            detail::throw_cuda_error(result, "cuModuleGetGlobal(pointer, bytes, module, name)",
                                     __FILE__, __LINE__);
    }
    std::ostringstream message;
    message << "no __device__ or __constant__ variable named '" << name << "' in " << m_description;
    if (m_program)
        if (auto variables = cache::cubin_variable_names(m_program->cubin())) {
            message << "; it has:";
            if (variables->empty()) message << " none";
            for (const auto& variable : *variables)
                message << ' ' << variable;
        }
    message << ". Declare it extern \"C\", or give its C++ name as a name expression (e.g. "
               "\"&ns::table\") when compiling";
    throw ArgumentError(message.str());
}

void DeviceGlobal::check_size(std::size_t bytes, const char* what) const {
    if (bytes != m_bytes)
        throw ArgumentError(std::string(what) + " global '" + m_name + "': it is " +
                            std::to_string(m_bytes) + " bytes, " + std::to_string(bytes) +
                            " bytes were given; copy exactly the variable's size");
}

void DeviceGlobal::copy_from_host(const void* source, std::size_t bytes, StreamRef stream) const {
    check_size(bytes, "cannot copy into");
    if (!bytes) return;
    detail::ObservedActivity observed(Activity::copy, "memcpy HtoD", bytes, stream);
    KILN_CU(cuMemcpyHtoDAsync(m_pointer, source, bytes, stream.get()));
    observed.done();
}

void DeviceGlobal::copy_to_host(void* destination, std::size_t bytes, StreamRef stream) const {
    check_size(bytes, "cannot copy from");
    if (!bytes) return;
    detail::ObservedActivity observed(Activity::copy, "memcpy DtoH", bytes, stream);
    KILN_CU(cuMemcpyDtoHAsync(destination, m_pointer, bytes, stream.get()));
    observed.done();
}

} // namespace kiln
