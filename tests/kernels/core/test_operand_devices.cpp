// The device check of a call's operands as a pure function: which operand is on another device,
// and the message that names every operand with its device.

#include "core/operand_devices.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

using kiln::detail::device_mismatch_message;
using kiln::detail::find_foreign_operand;
using kiln::detail::OperandDevice;

TEST(OperandDevices, OperandsOnTheCallsDeviceAgree) {
    const OperandDevice ops[] = {{"x", 1}, {"y", 1}, {"z", 1}};
    EXPECT_EQ(find_foreign_operand(ops, 3, 1), -1);
    EXPECT_EQ(find_foreign_operand(ops, 0, 5), -1);
}

TEST(OperandDevices, AnOperandOnAnotherDeviceIsFound) {
    const OperandDevice ops[] = {{"x", 0}, {"y", 1}, {"z", 0}};
    EXPECT_EQ(find_foreign_operand(ops, 3, 0), 1);
    // Every operand on a device other than the call's.
    const OperandDevice elsewhere[] = {{"x", 1}, {"y", 1}};
    EXPECT_EQ(find_foreign_operand(elsewhere, 2, 0), 0);
}

TEST(OperandDevices, UnknownDevicesAgreeWithAny) {
    const OperandDevice ops[] = {{"x", -1}, {"y", 2}, {"z", -1}};
    EXPECT_EQ(find_foreign_operand(ops, 3, 2), -1);
    EXPECT_EQ(find_foreign_operand(ops, 3, 0), 1);
    // The call's device not known: the operands must agree among themselves.
    EXPECT_EQ(find_foreign_operand(ops, 3, -1), -1);
    const OperandDevice split[] = {{"x", -1}, {"y", 2}, {"z", 3}};
    EXPECT_EQ(find_foreign_operand(split, 3, -1), 2);
}

TEST(OperandDevices, TheMessageNamesEveryOperandAndDevice) {
    const OperandDevice ops[] = {{"x", 0}, {"scale", -1}, {"y", 1}};
    const std::string message = device_mismatch_message(ops, 3, 0);
    EXPECT_NE(message.find("the call's device, GPU 0"), std::string::npos) << message;
    EXPECT_NE(message.find("'x' on GPU 0"), std::string::npos) << message;
    EXPECT_NE(message.find("'y' on GPU 1"), std::string::npos) << message;
    EXPECT_EQ(message.find("'scale'"), std::string::npos) << message; // no device to name
    EXPECT_NE(message.find("CallOptions::device"), std::string::npos) << message;
    EXPECT_NE(message.find("copy_to"), std::string::npos) << message;
    EXPECT_NE(device_mismatch_message(ops, 3, -1).find("not all on one device"), std::string::npos);
}

} // namespace
