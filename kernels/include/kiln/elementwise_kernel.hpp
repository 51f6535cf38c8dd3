#pragma once
/// @file
/// ElementwiseKernel with CuPy's semantics, in C++.
///
/// @code
/// kiln::ElementwiseKernel squared_diff("T x, T y", "T z", "z = (x - y) * (x - y)",
///                                      "squared_diff");
/// kiln::Array z = squared_diff(x, y);       // z allocated, shape broadcast from x and y
/// squared_diff(x, 2.5f, z);                 // a scalar input, an output given
/// @endcode

#include "kiln/array.hpp"
#include "kiln/param_spec.hpp"
#include "kiln/scalar.hpp"
#include "kiln/stream.hpp"

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Code pieces and switches of an ElementwiseKernel (CuPy's keyword arguments).
struct ElementwiseOptions {
    std::string preamble;      ///< at file scope, before the kernel (helper functions, macros)
    std::string loop_prep;     ///< in the kernel, before the loop over elements
    std::string after_loop;    ///< in the kernel, after the loop
    bool no_return = false;    ///< calls return no outputs
    bool return_tuple = false; ///< calls return every output even when there is one (informative
                               ///< in C++: Outputs always holds them all)
    bool reduce_dims = true;   ///< collapse contiguous dimensions before specializing
    std::vector<std::string> options; ///< extra NVRTC options
};

/// Per-call settings.
struct CallOptions {
    StreamRef stream;
    /// Number of elements when every array is `raw` (CuPy's `size=`).
    std::optional<std::int64_t> size;
    /// Threads per block; unset chooses. 0 or over 1024 is an ArgumentError.
    std::optional<int> block_size;
};

/// One argument of a call: an array or a scalar.
class Arg {
  public:
    Arg(const Array& array) noexcept
        : m_array(&array)
        , m_scalar(0) {} // NOLINT: implicit
    Arg(Scalar scalar) noexcept
        : m_array(nullptr)
        , m_scalar(scalar) {} // NOLINT: implicit
    template <class T, class = std::enable_if_t<std::is_arithmetic_v<T>>>
    Arg(T value) noexcept
        : m_array(nullptr)
        , m_scalar(value) {} // NOLINT: implicit
    bool is_array() const noexcept { return m_array != nullptr; }
    const Array& array() const noexcept { return *m_array; }
    const Scalar& scalar() const noexcept { return m_scalar; }

  private:
    const Array* m_array;
    Scalar m_scalar;
};

/// The outputs of a call, in the order of the output parameters. Converts to Array when there is
/// exactly one.
class Outputs {
  public:
    std::size_t size() const noexcept { return m_count; }
    const Array& operator[](std::size_t i) const { return m_arrays.at(i); }
    Array& operator[](std::size_t i) { return m_arrays.at(i); }
    /// The single output. @throws ArgumentError when there is not exactly one.
    operator Array() const; // NOLINT: implicit by design, `Array z = kernel(x, y);`
    void push_back(Array array);

  private:
    std::array<Array, 8> m_arrays;
    std::size_t m_count = 0;
};

class ElementwiseKernel {
  public:
    /// @p in_params and @p out_params are CuPy parameter specs ("T x, raw T y, float32 a");
    /// @p operation is CUDA C++ run once per element, seeing each non-raw parameter by name, `i`
    /// (the element's index) and `_ind.size()`.
    /// @throws SpecError for a spec that does not parse (shown with a caret at the fault).
    ElementwiseKernel(std::string in_params, std::string out_params, std::string operation,
                      std::string name = "kernel", ElementwiseOptions options = {});
    ~ElementwiseKernel();
    ElementwiseKernel(ElementwiseKernel&&) noexcept;
    ElementwiseKernel& operator=(ElementwiseKernel&&) noexcept;

    /// Run on inputs, optionally followed by outputs: arrays (kiln::Array) or scalars.
    /// Outputs not given are allocated with the broadcast shape.
    /// @throws ArgumentError (argument count, dtype), ShapeError, CompileError, CudaError.
    template <class... Args> Outputs operator()(const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), CallOptions{});
    }
    /// The same with per-call options (stream, size, block size).
    template <class... Args>
    Outputs operator()(const CallOptions& call_options, const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), call_options);
    }
    Outputs call(const Arg* args, std::size_t count, const CallOptions& options) const;

    /// The CUDA source this call would compile (no device needed; nothing is launched or
    /// allocated: outputs not given are described by shape and dtype only).
    std::string source_for(const Arg* args, std::size_t count,
                           const CallOptions& options = {}) const;

    const std::string& name() const noexcept;
    const std::vector<ParamSpec>& in_params() const noexcept;
    const std::vector<ParamSpec>& out_params() const noexcept;

    struct Impl;

  private:
    std::unique_ptr<Impl> m_impl;
};

} // namespace kiln
