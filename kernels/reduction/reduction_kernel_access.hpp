#pragma once
// What Kiln's own tests may set beyond a ReductionKernel's public API, without the public header
// naming a test-only friend.

namespace kiln::detail {

/// Plan the calls of ReductionKernel::source_for / compile_for / describe_for (which have no
/// device) as on a device with @p multiprocessors; 0 (the default) plans with none, as those
/// calls always did. A call plans with its device's count whatever this says.
void set_planning_multiprocessors_for_testing(int multiprocessors) noexcept;

} // namespace kiln::detail
