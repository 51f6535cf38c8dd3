#pragma once
/// @file
/// RawModule and RawKernel: CUDA source you write, compiled with NVRTC, cached, and launched, as
/// CuPy's classes of the same names. docs/raw-kernels.md shows them with templates,
/// name expressions and headers.
///
/// @code
/// kiln::RawKernel add(R"(extern "C" __global__ void my_add(const float* x, const float* y,
///                                                        float* z, int n) {
///     int i = blockIdx.x * blockDim.x + threadIdx.x;
///     if (i < n) z[i] = x[i] + y[i];
/// })", "my_add");
/// add({(n + 255) / 256}, {256}, x.data<float>(), y.data<float>(), z.data<float>(), n);
/// @endcode

#include "kiln/compiler.hpp"
#include "kiln/device_guard.hpp"
#include "kiln/launch.hpp"
#include "kiln/module.hpp"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

class RawKernel;

/// A module of raw CUDA source (or a cubin / PTX / fatbin file). Compiles on first use, once per
/// architecture, through the in-memory and disk caches; loads once per context. Cheap to copy:
/// copies share the compiled and loaded state. Thread-safe.
class RawModule {
  public:
    /// @p options: NVRTC options as a braced list (`{"-DN=4"}`) or full CompileOptions
    /// (architecture, headers, lineinfo, disk cache). @p name_expressions: C++ names (templates,
    /// overloads) to look kernels up by, e.g. "scale<float>"; added to the options' own.
    /// Nothing is compiled until first use.
    /// @param source the CUDA source.
    /// @param options NVRTC options or full CompileOptions.
    /// @param name_expressions C++ names of kernels to look up.
    explicit RawModule(std::string source, CompileOptions options = {},
                       std::vector<std::string> name_expressions = {});
    /// A module from a .cubin, .ptx or .fatbin file, read now and loaded on first use.
    /// @param path the file.
    /// @return the module.
    /// @throws ArgumentError if the file is missing or is not a module image.
    static RawModule from_file(const std::string& path);

    /// The kernel @p name (a plain name or one of the name expressions).
    /// @param name the kernel's name; checked when the kernel is first launched or its
    /// RawKernel::function() asked for (an ArgumentError naming the kernels there are).
    /// @return the kernel, which shares this module's state.
    RawKernel get_function(const std::string& name) const;
    /// Compile now without loading (works without a GPU when an architecture is given).
    /// nullptr for a module loaded from a file.
    /// @return the program for the options' architecture, else the current device's.
    /// @throws CompileError; NoDeviceError with neither an architecture nor a device.
    std::shared_ptr<const Program> compile() const;
    /// The module loaded in the current context (compiling and loading it if needed).
    /// @return the module, loaded once per context.
    /// @throws CompileError, CudaError, NoDeviceError.
    std::shared_ptr<const Module> module() const;
    /// The `__constant__` or `__device__` variable @p name in the module loaded in the current
    /// context (compiling and loading it if needed), as CuPy's `get_global`.
    /// @code
    /// kiln::RawModule m(R"(__constant__ float coefficients[4];
    /// extern "C" __global__ void apply(float* x) { x[threadIdx.x] *= coefficients[threadIdx.x];
    /// })"); m.get_global("coefficients").copy_from_host(std::array<float, 4>{1, 2, 3, 4});
    /// @endcode
    /// @param name the variable's name: `extern "C"`, C++ mangled, or a name expression.
    /// @return the variable: its address, size and copies from and to the host.
    /// @throws ArgumentError (no such variable: the message lists those there are),
    /// CompileError, CudaError, NoDeviceError.
    DeviceGlobal get_global(const std::string& name) const;

  private:
    friend class RawKernel;
    struct State;
    explicit RawModule(std::shared_ptr<State> state);
    std::shared_ptr<State> m_state;
};

/// One kernel of a RawModule. Launching costs a context check, a lock-free lookup of the kernel
/// loaded in that context, the argument checks and a cuLaunchKernel: no strings or allocation.
/// Cheap to copy; thread-safe.
class RawKernel {
  public:
    /// Compile @p source (lazily) and launch its kernel @p name. @p options: NVRTC options as a
    /// braced list (`{"-DN=4"}`) or full CompileOptions.
    /// @param source the CUDA source.
    /// @param name the kernel's name: an `extern "C"` name, or a name expression such as
    /// "scale<float>" listed in the options' name expressions.
    /// @param options NVRTC options or full CompileOptions.
    RawKernel(std::string source, std::string name, CompileOptions options = {});

    /// Launch on the legacy default stream: `kernel({blocks}, {threads}, args...)`.
    /// @tparam Args the argument types, as Function::launch() takes them.
    /// @param grid blocks in the grid.
    /// @param block threads per block.
    /// @param args the kernel's arguments, whose sizes must match its parameters.
    /// @throws ArgumentError, CompileError, CudaError, NoDeviceError.
    template <class... Args> void operator()(Dim3 grid, Dim3 block, const Args&... args) const {
        function().launch(LaunchConfig{grid, block}, args...);
    }
    /// Launch with a full configuration (stream, dynamic shared memory, cooperative, device:
    /// with LaunchConfig::device set, the launch runs on that device, loading the kernel there on
    /// first use; pointer arguments are not checked, they must be that device's).
    /// @tparam Args the argument types, as Function::launch() takes them.
    /// @param config the grid, block, dynamic shared memory, stream, cooperative switch, device.
    /// @param args the kernel's arguments.
    /// @throws ArgumentError, CompileError, CudaError, NoDeviceError.
    template <class... Args>
    void operator()(const LaunchConfig& config, const Args&... args) const {
        const detail::DeviceScope on_device(config.device);
        function().launch(config, args...);
    }

    /// The kernel in the current context, compiling and loading on first use.
    /// @return the kernel, valid while this RawKernel (or a copy) lives.
    /// @throws ArgumentError (no such kernel), CompileError, CudaError, NoDeviceError.
    const Function& function() const;
    /// The kernel's name.
    /// @return the kernel's name, as given.
    const std::string& name() const noexcept;
    /// Compile now without loading; see RawModule::compile.
    /// @return the program, or nullptr for a module loaded from a file.
    /// @throws CompileError, NoDeviceError.
    std::shared_ptr<const Program> compile() const;

    /// Every attribute the driver reports for the kernel in the current context (registers,
    /// static shared, constant and local bytes, limits, versions), compiling and loading it if
    /// needed.
    /// @return the attributes, read now.
    /// @throws ArgumentError, CompileError, CudaError, NoDeviceError.
    KernelAttributes attributes() const { return function().attributes(); }
    /// Allow launches in the current context with up to @p bytes of dynamic shared memory; see
    /// Function::set_max_dynamic_shared_size_bytes().
    /// @param bytes the new limit.
    /// @throws ArgumentError, CompileError, CudaError, NoDeviceError.
    void set_max_dynamic_shared_size_bytes(int bytes) const {
        function().set_max_dynamic_shared_size_bytes(bytes);
    }
    /// Prefer @p percent of L1/shared storage for shared memory in the current context; see
    /// Function::set_preferred_shared_memory_carveout().
    /// @param percent 0 to 100, or -1 for no preference.
    /// @throws ArgumentError, CompileError, CudaError, NoDeviceError.
    void set_preferred_shared_memory_carveout(int percent) const {
        function().set_preferred_shared_memory_carveout(percent);
    }
    /// Occupancy: blocks of @p block_threads threads with @p dynamic_shared_bytes of dynamic
    /// shared memory that fit on one multiprocessor at once.
    /// @param block_threads threads per block.
    /// @param dynamic_shared_bytes dynamic shared memory per block.
    /// @return the number of blocks; 0 when such a block cannot run.
    /// @throws ArgumentError, CompileError, CudaError, NoDeviceError.
    int max_active_blocks_per_multiprocessor(int block_threads,
                                             std::size_t dynamic_shared_bytes = 0) const {
        return function().max_active_blocks_per_multiprocessor(block_threads, dynamic_shared_bytes);
    }

  private:
    friend class RawModule;
    struct State;
    RawKernel(std::shared_ptr<RawModule::State> module, std::string name);

    std::shared_ptr<State> m_state;
};

} // namespace kiln
