#include "operand_devices.hpp"

#include "array/peer_copy.hpp"
#include "kiln/device.hpp"

#include <array>

namespace kiln::detail {

int find_foreign_operand(const OperandDevice* operands, std::size_t count,
                         int call_device) noexcept {
    int expected = call_device;
    for (std::size_t k = 0; k < count; ++k) {
        const int device = operands[k].device;
        if (device < 0) continue;
        if (expected < 0) expected = device;
        if (device != expected) return static_cast<int>(k);
    }
    return -1;
}

std::string device_mismatch_message(const OperandDevice* operands, std::size_t count,
                                    int call_device) {
    std::string text = "the operands are not all on ";
    text += call_device >= 0 ? "the call's device, GPU " + std::to_string(call_device)
                             : std::string("one device");
    text += " (";
    bool first = true;
    for (std::size_t k = 0; k < count; ++k) {
        if (operands[k].device < 0) continue;
        if (!first) text += ", ";
        first = false;
        text += "'";
        text += operands[k].name;
        text += "' on GPU " + std::to_string(operands[k].device);
    }
    text += "): run the call on the operands' device (CallOptions::device or kiln::DeviceGuard), "
            "or copy them there first (Array::copy_to)";
    return text;
}

namespace {

// Out of line: only a call that fails builds the list and the message.
[[noreturn, gnu::noinline]] void report_mismatch(const KernelParams& params, const Operands& ops,
                                                 int call_device) {
    std::array<OperandDevice, kMaxParams> devices;
    std::size_t count = 0;
    for (std::size_t k = 0; k < ops.given; ++k)
        if (!ops.is(k, OperandKind::scalar))
            devices[count++] = {params[k].name, operand_device(ops.arrays[k])};
    params.bad_call(device_mismatch_message(devices.data(), count, call_device));
}

} // namespace

void check_operand_devices(const KernelParams& params, const Operands& ops) {
    const int call_device = current_device_ordinal();
    for (std::size_t k = 0; k < ops.given; ++k) {
        if (ops.is(k, OperandKind::scalar)) continue;
        const int device = operand_device(ops.arrays[k]);
        if (device >= 0 && device != call_device) report_mismatch(params, ops, call_device);
    }
}

} // namespace kiln::detail
