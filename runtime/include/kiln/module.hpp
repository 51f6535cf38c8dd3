#pragma once
/// @file
/// Loaded modules and their kernels: Module owns a CUmodule loaded from a compiled Program or an
/// image file, and Function is one kernel in it, with its launch. The front ends (RawKernel,
/// RawModule and the generated kernels) are built on these; use them directly to load cubins made
/// elsewhere.

#include "kiln/compiler.hpp"
#include "kiln/launch.hpp"

#include <cuda.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

class Module;

/// A kernel in a loaded module. Cheap to copy; keeps its module alive.
class Function {
  public:
    /// No kernel; only assignment and handle() (which gives nullptr) may be used.
    Function() = default;

    /// The driver handle.
    /// @return the driver handle, nullptr for a default-constructed Function.
    CUfunction handle() const noexcept { return m_state ? m_state->function : nullptr; }
    /// The kernel's name as it was looked up.
    /// @return the kernel's name as it was looked up (a plain name or a name expression).
    const std::string& name() const;
    /// Number of kernel parameters and their sizes in bytes, as the driver reports them.
    /// @return the number of parameters.
    std::size_t parameter_count() const;
    /// The size in bytes of each parameter.
    /// @return the size in bytes of each parameter, in order.
    const std::vector<std::size_t>& parameter_sizes() const;
    /// The most threads a block of this kernel may have.
    /// @return the most threads a block of this kernel may have (registers may make it less than
    /// the device's limit).
    int max_threads_per_block() const;
    /// Blocks of @p block_threads threads (with @p shared_memory dynamic bytes) that fit on one
    /// multiprocessor at once.
    /// @param block_threads threads per block.
    /// @param shared_memory dynamic shared memory per block, in bytes.
    /// @return the number of blocks, 0 when such a block cannot run at all.
    /// @throws CudaError.
    int max_active_blocks_per_multiprocessor(int block_threads,
                                             std::size_t shared_memory = 0) const;

    /// Launch with arguments packed from values: device pointers, scalars of any width, plain
    /// structs (by value), DeviceBuffers (as their pointer). Sizes must match the kernel's
    /// parameters exactly.
    /// @code
    /// fn.launch({{blocks}, {256}}, out.data(), x.data(), 2.0f, n);
    /// @endcode
    /// @tparam Args the argument types, each trivially copyable or a DeviceBuffer.
    /// @param config the grid, block, dynamic shared memory and stream.
    /// @param args the kernel's arguments, in order.
    /// @throws ArgumentError for a bad geometry or arguments, CudaError.
    template <class... Args> void launch(const LaunchConfig& config, const Args&... args) const {
        detail::PackedArguments<Args...> packed(args...);
        launch_packed(config, packed.pointers(), packed.sizes(), packed.count());
    }

    /// Launch with arguments already packed: @p args[i] points at argument i, of @p sizes[i] bytes.
    /// Checked as launch() is.
    /// @param config the grid, block, dynamic shared memory and stream.
    /// @param args @p count pointers to the arguments' values.
    /// @param sizes @p count sizes in bytes.
    /// @param count the number of arguments, which must be parameter_count().
    /// @throws ArgumentError for a bad geometry or arguments, CudaError.
    void launch_packed(const LaunchConfig& config, void** args, const std::size_t* sizes,
                       std::size_t count) const;

  private:
    friend class Module;
    struct State {
        std::shared_ptr<const Module> module; // keeps the CUmodule loaded
        CUfunction function = nullptr;
        std::string name;
        std::vector<std::size_t> parameter_sizes;
        int max_threads_per_block = 0;
        int max_block[3] = {};
        int max_grid[3] = {};
        int max_shared_optin = 0;
        int multiprocessors = 0;
        int device = 0; // the ordinal of the module's context's device
        mutable std::atomic<std::size_t> shared_limit{std::size_t{48} * 1024};
    };
    explicit Function(std::shared_ptr<const State> state)
        : m_state(std::move(state)) {}
    void check_launch(const LaunchConfig& config, const std::size_t* sizes,
                      std::size_t count) const;
    void raise_shared_limit(std::size_t bytes) const;

    std::shared_ptr<const State> m_state;
};

/// A module loaded in the current context. Move-only owner of a CUmodule; share it through
/// std::shared_ptr (Functions keep it alive).
class Module : public std::enable_shared_from_this<Module> {
  public:
    /// Load a cubin, PTX or fatbin image into the current context.
    /// @param image the image's bytes.
    /// @param description what the image is, for error messages (e.g. a file name).
    /// @return the module.
    /// @throws ArgumentError (not a module image), CudaError, NoDeviceError.
    static std::shared_ptr<const Module> load(const std::string& image, std::string description);
    /// Load a compiled program, recompiling once if the driver rejects a cubin from the disk cache.
    /// @param program the program, kept alive by the module.
    /// @param options the options it was compiled with, for the recompile.
    /// @param compiler the compiler that recompiles.
    /// @return the module.
    /// @throws CudaError, NoDeviceError; CompileError if the recompile fails.
    static std::shared_ptr<const Module> load(std::shared_ptr<const Program> program,
                                              const CompileOptions& options,
                                              Compiler& compiler = Compiler::global());
    /// Load a .cubin, .ptx or .fatbin file.
    /// @param path the file.
    /// @return the module.
    /// @throws ArgumentError if it is missing or not one; CudaError, NoDeviceError.
    static std::shared_ptr<const Module> load_file(const std::string& path);
    /// Read a .cubin, .ptx or .fatbin file without loading it (no device needed).
    /// @param path the file.
    /// @return its bytes.
    /// @throws ArgumentError if it is missing, empty or not a module image.
    static std::string read_image_file(const std::string& path);
    /// Unloads the module; Functions keep it alive, so none is left dangling.
    ~Module();

    /// The driver handle.
    /// @return the driver handle.
    CUmodule handle() const noexcept { return m_module; }
    /// The context the module is loaded in.
    /// @return the context the module is loaded in.
    CUcontext context() const noexcept { return m_context; }
    /// The program it came from, when compiled by Kiln.
    /// @return the program, or null for a module loaded from an image.
    const std::shared_ptr<const Program>& program() const noexcept { return m_program; }
    /// The kernel named @p name: a plain name, or a name expression given at compile time.
    /// @param name the kernel's name.
    /// @return the kernel, which keeps this module alive.
    /// @throws ArgumentError naming the kernels the module has.
    Function function(const std::string& name) const;
    /// Names of the kernels in the module.
    /// @return the names, as the driver lists them (C++ kernels mangled).
    /// @throws CudaError.
    std::vector<std::string> kernel_names() const;

  private:
    Module(CUmodule module, CUcontext context, std::string description)
        : m_module(module)
        , m_context(context)
        , m_description(std::move(description)) {}
    CUmodule m_module;
    CUcontext m_context;
    std::string m_description;
    std::shared_ptr<const Program> m_program;
};

} // namespace kiln
