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

// Tests of several GPUs skip, with the reason, below @p n devices (after KILN_REQUIRE_GPU's
// checks): "needs 2 GPUs, 1 visible".
#define KILN_REQUIRE_GPUS(n)                                                                       \
    do {                                                                                           \
        KILN_REQUIRE_GPU();                                                                        \
        const int kiln_gpu_count_ = ::kiln::Device::count();                                       \
        if (kiln_gpu_count_ < (n))                                                                 \
            GTEST_SKIP() << "needs " << (n) << " GPUs, " << kiln_gpu_count_ << " visible";         \
    } while (0)
