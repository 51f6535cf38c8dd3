#pragma once
// GPU tests skip, with the reason, where there is no usable driver or device.

#include "kiln/device.hpp"

#include <gtest/gtest.h>

#include <string>

#define KILN_REQUIRE_GPU()                                                                         \
    do {                                                                                           \
        std::string kiln_gpu_reason_;                                                              \
        if (!::kiln::Device::available(&kiln_gpu_reason_))                                         \
            GTEST_SKIP() << "no GPU: " << kiln_gpu_reason_;                                        \
    } while (0)
