#pragma once
// The kernels behind the ready elementwise operations (kiln/ops.hpp), for tests that generate and
// compile them without a device: one ElementwiseKernel per operation and compute type, built from
// the table of op_rules.hpp on first use and kept.

#include "kiln/elementwise_kernel.hpp"
#include "op_rules.hpp"

namespace kiln::detail {

/// The kernel kiln::<op> runs when @p op computes in @p compute (OpTypes::compute).
const ElementwiseKernel& ready_op_kernel(ElementwiseOp op, DType compute);
/// The kernel kiln::divmod runs: floor_divide and remainder as two outputs.
const ElementwiseKernel& ready_divmod_kernel(DType compute);

} // namespace kiln::detail
