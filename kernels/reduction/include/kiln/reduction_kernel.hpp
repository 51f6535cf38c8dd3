#pragma once
/// @file
/// ReductionKernel with CuPy's semantics, in C++: a map expression per element, a reduce
/// expression over `a` and `b`, a post-map expression per output and an identity.
///
/// @code
/// kiln::ReductionKernel l2norm("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm");
/// kiln::Array norms = l2norm(kiln::ReduceCall{1}, x);   // over axis 1
/// kiln::Array total = l2norm(x);                        // over every axis: a 0-d array
/// @endcode
///
/// Names the expressions see: every input by name, `_J` (the element's index within its
/// reduction, C order over the reduced axes) and `_j` (CuPy's `_J * _out_ind.size() + _i`) in
/// the map expression; scalar inputs in the identity too; `a` and `b` in the reduce
/// expression; `a` (the reduced value) and every output by name in the post-map expression; `_i`
/// (the output's index, C order) in both; `_in_ind.size()` and `_out_ind.size()` (elements of
/// the broadcast input and of the output) everywhere but the reduce expression. `_type_reduce` is
/// the reduce type. `kiln::pair<A, B>` and `kiln::make_pair` (kiln/reduction.cuh) serve
/// value-and-index reductions: `kiln::argmax_merge(a, b)` and `kiln::argmin_merge(a, b)` on them
/// are NumPy's argmax and argmin (the first NaN, else the first extreme). For complex values they
/// use NumPy's order (real parts first, then imaginary parts; a NaN in either part wins), as do
/// `kiln::maximum`, `kiln::minimum`, `kiln::less`, `kiln::greater`, `kiln::less_equal`,
/// `kiln::greater_equal` and `kiln::has_nan`, which take real values too.
///
/// Results are deterministic: the same input, shape and device give bitwise the same result on
/// every run (no floating-point atomics; partial results combine in a fixed order).

#include "kiln/array.hpp"
#include "kiln/axes.hpp"
#include "kiln/call_arguments.hpp"
#include "kiln/compiler.hpp"
#include "kiln/param_spec.hpp"
#include "kiln/stream.hpp"

#include <array>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Per-call settings of a reduction.
struct ReduceCall {
    Axes axis;             ///< which axes to reduce; all by default
    bool keepdims = false; ///< keep reduced axes as extent-1 dimensions
    /// The stream the call's allocations and launches are ordered on.
    StreamRef stream;
    /// Tune this call's launch configuration (kiln/tuning.hpp; ReductionOptions::tune says what).
    bool tune = false;
    /// The device the call runs on, as CallOptions::device; unset: the current context's.
    std::optional<int> device;
};

/// The construction-time options of a ReductionKernel (CuPy's keyword arguments).
struct ReductionOptions {
    /// The type partial results have (`_type_reduce`): a C++ type, a dtype name or a type
    /// placeholder. Empty: the first output's type.
    std::string reduce_type;
    std::string preamble;    ///< at file scope, before the kernel (helper functions, macros)
    bool reduce_dims = true; ///< merge dimensions that are contiguous for every operand
    /// Also for kernels with an identity, make an empty reduction an error (as NumPy's max): the
    /// identity then only seeds the kernel.
    bool empty_is_error = false;
    std::vector<std::string> options; ///< extra NVRTC options
    /// Tune every call's launch configuration (kiln/tuning.hpp), only where the order in which
    /// elements are combined stays as it is: the block size of the warp-per-output layout (each
    /// output is reduced by one warp whatever the block), and a cap on the grid of every layout's
    /// grid-stride loop (over outputs, or over batches of columns). Every split of a reduction
    /// across blocks, and every other block size, changes which elements are combined in what
    /// order, so none is tried.
    bool tune = false;
};

/// A generated reduction kernel. Construction parses the specs; each call binds the placeholders
/// to its arguments' dtypes, chooses a layout for the reduced and kept axes, and compiles (once per
/// dtypes, dimensions and layout, then from the caches) and launches. Move-only; calls on one
/// kernel may come from any thread.
class ReductionKernel {
  public:
    /// @p in_params and @p out_params are CuPy parameter specs ("T x, T w", "T y") without
    /// `raw`; @p map_expr is a C++ expression per element, @p reduce_expr combines two partial
    /// results `a` and `b`, @p post_map_expr is run once per output (statements, e.g.
    /// "y = sqrt(a)"), @p identity is an identity of the reduce expression (`reduce(identity,
    /// v) == v`), written as C++ `_type_reduce(identity)`: every partial result starts from it,
    /// and an empty reduction gives post-map(identity). Empty for none: then reducing over zero
    /// elements is an error. A reduce type Kiln cannot size (not a dtype) may take up to 64
    /// bytes; a larger one fails to compile with a static_assert saying so.
    /// @throws SpecError for a spec that does not parse, a `raw` parameter, an empty expression
    /// or a reserved output name (`a`, `b`).
    /// @param in_params the input parameters' spec.
    /// @param out_params the output parameters' spec.
    /// @param map_expr the expression mapping each input element to a partial result.
    /// @param reduce_expr the expression combining partial results `a` and `b`.
    /// @param post_map_expr the statements writing each output from the reduced value `a`.
    /// @param identity the reduce expression's identity, or empty for none.
    /// @param name the kernel's name, as profilers show it (it must be an identifier).
    /// @param options reduce type, preamble and switches.
    ReductionKernel(const std::string& in_params, const std::string& out_params,
                    std::string map_expr, std::string reduce_expr, std::string post_map_expr,
                    std::string identity, std::string name = "reduce_kernel",
                    ReductionOptions options = {});
    /// Frees the kernel's specializations (programs stay in the caches).
    ~ReductionKernel();
    /// Takes the other kernel's state; the moved-from kernel may only be assigned or destroyed.
    ReductionKernel(ReductionKernel&&) noexcept;
    /// Takes the other kernel's state; the moved-from kernel may only be assigned or destroyed.
    /// @return this kernel.
    ReductionKernel& operator=(ReductionKernel&&) noexcept;

    /// Reduce over every axis: inputs, optionally followed by outputs (arrays or scalars). The
    /// arrays are held by reference for the call: they must outlive it (an Arg made from a
    /// temporary Array dangles once the full expression ends).
    /// @throws AxisError, ArgumentError (arguments, an empty reduction with no identity),
    /// ShapeError, CompileError (naming the expression at fault), CudaError.
    /// @tparam Args Array, Scalar or C++ number types.
    /// @param args the inputs in the order of the input spec, then optionally every output.
    /// @return the outputs (given or allocated), in order.
    template <class... Args> Outputs operator()(const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), ReduceCall{});
    }
    /// The same with axes, keepdims and a stream.
    /// @tparam Args Array, Scalar or C++ number types.
    /// @param how the axes, keepdims and stream.
    /// @param args the inputs, then optionally every output.
    /// @return the outputs, in order.
    template <class... Args> Outputs operator()(const ReduceCall& how, const Args&... args) const {
        const std::array<Arg, sizeof...(Args)> packed{Arg(args)...};
        return call(packed.data(), packed.size(), how);
    }
    /// The call operator's work, with arguments already made into Args (for wrappers and
    /// arguments known only at run time).
    /// @param args @p count arguments: inputs, then optionally every output.
    /// @param count how many.
    /// @param how the axes, keepdims and stream.
    /// @return the outputs, in order.
    /// @throws as the call operator.
    Outputs call(const Arg* args, std::size_t count, const ReduceCall& how) const;

    /// The CUDA source this call would compile (no device needed; nothing is launched or
    /// allocated). It depends only on the call, never on the device: a call on any GPU compiles
    /// this source (only its grid follows the device's multiprocessor count).
    /// @param args @p count arguments, as for call().
    /// @param count how many.
    /// @param how the axes and keepdims (the stream is not used).
    /// @return the complete source handed to NVRTC.
    /// @throws AxisError, ArgumentError, ShapeError as a call would.
    std::string source_for(const Arg* args, std::size_t count, const ReduceCall& how = {}) const;

    /// Compile this call's kernel for @p arch (e.g. "sm_90") without launching anything: warms the
    /// caches ahead of time; no device needed.
    /// @param args @p count arguments, as for call(); only their dtypes, shapes and layouts count.
    /// @param count how many.
    /// @param how the axes and keepdims.
    /// @param arch the target architecture.
    /// @return the compiled program.
    /// @throws CompileError as a call would.
    std::shared_ptr<const Program> compile_for(const Arg* args, std::size_t count,
                                               const ReduceCall& how,
                                               const std::string& arch) const;

    /// This call's kernel described in JSON (no device needed): the spec, each argument's dtype
    /// and shape (strides when not C-contiguous, the address modulo 16 bytes when not 0), the
    /// axes and keepdims. A cache entry's recipe holds it, and it is a `kiln warm` manifest entry
    /// as it is: warming it compiles the kernel this call asks for.
    /// @param args @p count arguments, as for call().
    /// @param count how many.
    /// @param how the axes and keepdims.
    /// @return the description, a JSON object.
    /// @throws as source_for.
    std::string describe_for(const Arg* args, std::size_t count, const ReduceCall& how = {}) const;

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
