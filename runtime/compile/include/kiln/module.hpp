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
#include <cstddef>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace kiln {

class Module;

/// Every cuFuncGetAttribute value of a kernel, read at once (Function::attributes()). The field
/// names are CuPy's (`RawKernel.attributes`). Sizes are in bytes.
struct KernelAttributes {
    /// The most threads a block may have; registers may make it less than the device's limit.
    int max_threads_per_block = 0;
    /// Statically allocated shared memory (`__shared__` arrays), in bytes.
    std::size_t shared_size_bytes = 0;
    /// User constant memory the kernel uses, in bytes.
    std::size_t const_size_bytes = 0;
    /// Local memory per thread (spills, local arrays), in bytes.
    std::size_t local_size_bytes = 0;
    /// Registers per thread.
    int num_regs = 0;
    /// The PTX ISA version it was compiled for, as major * 10 + minor (e.g. 90).
    int ptx_version = 0;
    /// The binary architecture version, as major * 10 + minor (e.g. 90 for sm_90).
    int binary_version = 0;
    /// Whether it was compiled with `-Xptxas --dlcm=ca` (global loads cached in L1).
    bool cache_mode_ca = false;
    /// The most dynamic shared memory a launch may ask for, in bytes (48 KiB until raised).
    std::size_t max_dynamic_shared_size_bytes = 0;
    /// The preferred share of the L1/shared storage given to shared memory, in percent; -1 when
    /// no preference was set.
    int preferred_shared_memory_carveout = -1;
    /// Whether a cluster size must be given at launch (`__cluster_dims__` absent but required).
    bool cluster_size_must_be_set = false;
    /// The compile-time cluster width (`__cluster_dims__`); 0 when none.
    int required_cluster_width = 0;
    /// The compile-time cluster height; 0 when none.
    int required_cluster_height = 0;
    /// The compile-time cluster depth; 0 when none.
    int required_cluster_depth = 0;
    /// Whether clusters larger than the portable limit (8 blocks) are allowed.
    bool non_portable_cluster_size_allowed = false;
    /// The cluster scheduling policy preference (a CUclusterSchedulingPolicy value).
    int cluster_scheduling_policy_preference = 0;
};

/// A `__constant__` or `__device__` variable of a loaded module (Module::global(),
/// RawModule::get_global()): its device address and size, with stream-ordered copies from and to
/// the host. Copies must cover the whole variable, byte for byte. Cheap to copy; keeps its module
/// loaded.
/// @code
/// // __constant__ float table[4];
/// auto table = module.get_global("table");
/// table.copy_from_host(std::vector<float>{1, 2, 3, 4});
/// @endcode
class DeviceGlobal {
  public:
    /// The variable's name as it was looked up.
    /// @return the name.
    const std::string& name() const noexcept { return m_name; }
    /// Its device address, which a kernel may also take as a pointer argument.
    /// @return the address.
    CUdeviceptr ptr() const noexcept { return m_pointer; }
    /// Its size in bytes.
    /// @return the size.
    std::size_t bytes() const noexcept { return m_bytes; }

    /// Queue a copy of @p bytes bytes from @p source into the variable on @p stream. Keep the
    /// source unchanged until the copy is done (pageable memory is copied before the call
    /// returns).
    /// @param source host memory.
    /// @param bytes the number of bytes, which must be bytes().
    /// @param stream the stream the copy is queued on.
    /// @throws ArgumentError for a size that is not bytes(), CudaError.
    void copy_from_host(const void* source, std::size_t bytes, StreamRef stream = {}) const;
    /// Queue a copy of the variable into @p destination on @p stream; synchronize the stream
    /// before reading it.
    /// @param destination host memory.
    /// @param bytes the number of bytes, which must be bytes().
    /// @param stream the stream the copy is queued on.
    /// @throws ArgumentError for a size that is not bytes(), CudaError.
    void copy_to_host(void* destination, std::size_t bytes, StreamRef stream = {}) const;

    /// Copy host data into the variable: a contiguous container of trivially copyable elements
    /// (std::vector, std::array, a C array) or one trivially copyable value (a scalar, a struct),
    /// whose size must be bytes().
    /// @tparam T the container or value type.
    /// @param data the container or value; keep it unchanged until the copy is done.
    /// @param stream the stream the copy is queued on.
    /// @throws ArgumentError for a size that is not bytes(), CudaError.
    template <class T> void copy_from_host(const T& data, StreamRef stream = {}) const {
        if constexpr (IsContainer<T>::value) {
            using Element = std::remove_cv_t<std::remove_reference_t<decltype(*std::data(data))>>;
            static_assert(std::is_trivially_copyable_v<Element>,
                          "the elements must be trivially copyable");
            copy_from_host(std::data(data), std::size(data) * sizeof(Element), stream);
        } else {
            static_assert(std::is_trivially_copyable_v<T>, "the value must be trivially copyable");
            copy_from_host(&data, sizeof(T), stream);
        }
    }
    /// Copy the variable into @p data (a container as for copy_from_host(), or one value) and
    /// wait for the copy: on return @p data holds the variable's bytes.
    /// @tparam T the container or value type.
    /// @param data where the bytes go, of bytes() bytes.
    /// @param stream the stream the copy is ordered on.
    /// @throws ArgumentError for a size that is not bytes(), CudaError.
    template <class T> void copy_to_host(T& data, StreamRef stream = {}) const {
        if constexpr (IsContainer<T>::value) {
            using Element = std::remove_reference_t<decltype(*std::data(data))>;
            static_assert(std::is_trivially_copyable_v<Element> && !std::is_const_v<Element>,
                          "the elements must be writable and trivially copyable");
            copy_to_host(std::data(data), std::size(data) * sizeof(Element), stream);
        } else {
            static_assert(std::is_trivially_copyable_v<T>, "the value must be trivially copyable");
            copy_to_host(&data, sizeof(T), stream);
        }
        stream.synchronize();
    }

  private:
    friend class Module;
    template <class T, class = void> struct IsContainer : std::false_type {};
    template <class T>
    struct IsContainer<T, std::void_t<decltype(std::data(std::declval<T&>())),
                                      decltype(std::size(std::declval<T&>()))>> : std::true_type {};
    DeviceGlobal(std::shared_ptr<const Module> module, std::string name, CUdeviceptr pointer,
                 std::size_t bytes)
        : m_module(std::move(module))
        , m_name(std::move(name))
        , m_pointer(pointer)
        , m_bytes(bytes) {}
    void check_size(std::size_t bytes, const char* what) const;

    std::shared_ptr<const Module> m_module; // keeps the variable's module loaded
    std::string m_name;
    CUdeviceptr m_pointer = 0;
    std::size_t m_bytes = 0;
};

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
    /// Every attribute the driver reports for this kernel, read now (so a setter's effect shows).
    /// @return the attributes.
    /// @throws CudaError.
    KernelAttributes attributes() const;
    /// Allow launches with up to @p bytes of dynamic shared memory (over 48 KiB needs this on
    /// most GPUs; launch() also raises the limit by itself when a launch asks for more).
    /// @param bytes the new limit, at most the device's opt-in limit.
    /// @throws ArgumentError for a negative value or one over the device's limit, CudaError.
    void set_max_dynamic_shared_size_bytes(int bytes) const;
    /// Prefer giving @p percent of the L1/shared storage to shared memory (a hint; -1 for no
    /// preference).
    /// @param percent 0 to 100, or -1.
    /// @throws ArgumentError outside that range, CudaError.
    void set_preferred_shared_memory_carveout(int percent) const;

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
        // The kernel's own limit (registers, __launch_bounds__), asked of the driver when first
        // needed (0 until then): a launch over it fails in the driver, and is explained then.
        mutable std::atomic<int> max_threads_per_block{0};
        int max_block_threads = 0; // the device's limit on a block's threads
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
    void explain_failed_launch(const LaunchConfig& config) const;

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
    /// The `__constant__` or `__device__` variable @p name: a plain name (a C++ one mangled, or
    /// `extern "C"`) or a name expression given at compile time (e.g. "&table" or "table").
    /// @param name the variable's name.
    /// @return the variable, which keeps this module loaded.
    /// @throws ArgumentError naming the variables the module has, CudaError.
    DeviceGlobal global(const std::string& name) const;
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
