#pragma once
// Which device a call's operands are on: every array a call is given must be on the device the
// call runs on (the current context's, or the one CallOptions names), or the kernel would read
// another GPU's memory. The check on the call path compares small integers and allocates nothing;
// only a mismatch builds a message.

#include "kernel_params.hpp"
#include "operands.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace kiln::detail {

/// One array operand: its parameter's name and the ordinal of the device its memory is on (-1:
/// not known, which agrees with any device).
struct OperandDevice {
    std::string_view name;
    int device = -1;
};

/// The index of the first operand on a known device other than @p call_device; -1 when all agree.
/// With @p call_device -1 (not known), the operands must agree among themselves.
int find_foreign_operand(const OperandDevice* operands, std::size_t count,
                         int call_device) noexcept;

/// The message for operands that do not agree (to follow "<who>: "): every operand on a known
/// device with that device, the call's device, and what to do.
std::string device_mismatch_message(const OperandDevice* operands, std::size_t count,
                                    int call_device);

/// Checks that the array operands given to a call (not the outputs still to be made) are on the
/// current context's device. @throws ArgumentError naming the parameters and their devices.
void check_operand_devices(const KernelParams& params, const Operands& ops);

} // namespace kiln::detail
