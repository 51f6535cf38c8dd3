#pragma once
/// @file
/// ElementwiseKernel with CuPy's semantics, in C++: a kernel generated from parameter specs and a
/// per-element operation, specialized on each call's dtypes, dimensions and layout, broadcasting
/// its inputs as NumPy does. docs/elementwise.md covers type placeholders
/// and `raw` parameters, docs/arrays.md scalars.
///
/// @code
/// kiln::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
///                                      "squared_diff");
/// kiln::Array z = squared_diff(x, y);       // z allocated, shape broadcast from x and y
/// squared_diff(x, 2.5f, z);                 // a scalar input, an output given
/// @endcode

#include "kiln/array.hpp"
#include "kiln/call_arguments.hpp"
#include "kiln/compiler.hpp"
#include "kiln/param_spec.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// Code pieces and switches of an ElementwiseKernel (CuPy's keyword arguments).
struct ElementwiseOptions {
    std::string preamble;    ///< at file scope, before the kernel (helper functions, macros)
    std::string loop_prep;   ///< in the kernel, before the loop over elements
    std::string after_loop;  ///< in the kernel, after the loop
    bool no_return = false;  ///< calls return no outputs (else every output, even a single one)
    bool reduce_dims = true; ///< collapse contiguous dimensions before specializing
    std::vector<std::string> options; ///< extra NVRTC options
    /// Tune every call's launch configuration (kiln/tuning.hpp): the block size, and a cap on the
    /// grid of the flat and strided layouts. Not tuned: the tiled layout, and kernels with a
    /// loop_prep or after_loop (code run per thread, whose results may follow the grid).
    bool tune = false;
};

/// A generated elementwise kernel. Construction parses the specs only; each call binds the
/// placeholders to its arguments' dtypes and compiles (once per dtypes, dimensions and layout, then
/// from the caches) and launches. Move-only; calls on one kernel may come from any thread.
class ElementwiseKernel {
  public:
    /// @p in_params and @p out_params are CuPy parameter specs ("T x, raw T y, float32 a");
    /// @p operation is CUDA C++ run once per element, seeing each non-raw parameter by name, `i`
    /// (the element's index), `_ind.size()`, `_ind.ndim` and `_ind.get()`; each `raw` parameter
    /// `x` has `x[i]`, `x[idx]`, `x.size()`, `x.shape()` and `x.strides()` (in bytes), as in CuPy.
    /// A `return` in it ends only the current element.
    /// @param in_params the input parameters' spec.
    /// @param out_params the output parameters' spec.
    /// @param operation the code run for each element.
    /// @param name the kernel's name, as profilers show it (it must be an identifier).
    /// @param options preamble, loop_prep, after_loop and switches.
    /// @throws SpecError for a spec that does not parse (shown with a caret at the fault).
    ElementwiseKernel(const std::string& in_params, const std::string& out_params,
                      std::string operation, std::string name = "kernel",
                      ElementwiseOptions options = {});
    /// Frees the kernel's specializations (programs stay in the caches).
    ~ElementwiseKernel();
    /// Takes the other kernel's state; the moved-from kernel may only be assigned or destroyed.
    ElementwiseKernel(ElementwiseKernel&&) noexcept;
    /// Takes the other kernel's state; the moved-from kernel may only be assigned or destroyed.
    /// @return this kernel.
    ElementwiseKernel& operator=(ElementwiseKernel&&) noexcept;

    /// Run on inputs, optionally followed by outputs: arrays (kiln::Array) or scalars.
    /// Outputs not given are allocated with the broadcast shape.
    /// @tparam Args Array, Scalar or C++ number types.
    /// @param args the inputs in the order of the input spec, then optionally every output.
    /// @return the outputs (given or allocated), in order; none with ElementwiseOptions::no_return.
    /// @throws ArgumentError (argument count, dtype), ShapeError, CompileError (naming the piece
    /// of code at fault: the operation, preamble, loop_prep or after_loop), CudaError.
    template <class... Args> Outputs operator()(const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), CallOptions{});
    }
    /// The same with per-call options (stream, size, block size).
    /// @tparam Args Array, Scalar or C++ number types.
    /// @param call_options the stream, size and block size.
    /// @param args the inputs, then optionally every output.
    /// @return the outputs, in order; none with ElementwiseOptions::no_return.
    template <class... Args>
    Outputs operator()(const CallOptions& call_options, const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), call_options);
    }
    /// The call operator's work, with arguments already made into Args (for wrappers and
    /// arguments known only at run time).
    /// @param args @p count arguments: inputs, then optionally every output.
    /// @param count how many.
    /// @param options the stream, size and block size.
    /// @return the outputs, in order; none with ElementwiseOptions::no_return.
    /// @throws as the call operator.
    Outputs call(const Arg* args, std::size_t count, const CallOptions& options) const;

    /// The CUDA source this call would compile (no device needed; nothing is launched or
    /// allocated: outputs not given are described by shape and dtype only).
    /// @param args @p count arguments, as for call().
    /// @param count how many.
    /// @param options the size and block size (the stream is not used).
    /// @return the complete source handed to NVRTC.
    /// @throws ArgumentError, ShapeError as a call would.
    std::string source_for(const Arg* args, std::size_t count,
                           const CallOptions& options = {}) const;

    /// Compile this call's kernel for @p arch (e.g. "sm_90") without launching anything: warms the
    /// caches ahead of time; no device needed.
    /// @param args @p count arguments, as for call(); only their dtypes, shapes and layouts count.
    /// @param count how many.
    /// @param options the size and block size.
    /// @param arch the target architecture.
    /// @return the compiled program.
    /// @throws CompileError as a call would.
    std::shared_ptr<const Program> compile_for(const Arg* args, std::size_t count,
                                               const CallOptions& options,
                                               const std::string& arch) const;

    /// This call's kernel described in JSON (no device needed): the spec, each argument's dtype
    /// and shape (strides when not C-contiguous, the address modulo 16 bytes when not 0) and the
    /// call's size and block size. A cache entry's recipe holds it, and it is a `kiln warm`
    /// manifest entry as it is: warming it compiles the kernel this call asks for.
    /// @param args @p count arguments, as for a call.
    /// @param count how many.
    /// @param options the call's settings.
    /// @return the description, a JSON object.
    /// @throws as source_for.
    std::string describe_for(const Arg* args, std::size_t count,
                             const CallOptions& options = {}) const;

    /// The kernel's name.
    /// @return the kernel's name.
    const std::string& name() const noexcept;
    /// The parsed input parameters.
    /// @return the parsed input parameters.
    const std::vector<ParamSpec>& in_params() const noexcept;
    /// The parsed output parameters.
    /// @return the parsed output parameters.
    const std::vector<ParamSpec>& out_params() const noexcept;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln
