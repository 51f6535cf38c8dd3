#pragma once
/// @file
/// RawModule and RawKernel: CUDA source you write, compiled with NVRTC, cached, and launched, as
/// CuPy's classes of the same names. The README's "RawKernel" and "RawModule" sections show them
/// with templates, name expressions and headers.
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

  private:
    friend class RawModule;
    struct State;
    RawKernel(std::shared_ptr<RawModule::State> module, std::string name);

    std::shared_ptr<State> m_state;
};

} // namespace kiln
