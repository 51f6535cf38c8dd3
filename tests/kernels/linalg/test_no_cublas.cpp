// Run with KILN_CUBLAS_LIBRARY pointing nowhere (see CMakeLists.txt), on every machine: matmul
// says why it cannot run, before any device work, while everything else (compiling, planning,
// diagonal views) still works.

#include "kiln/array.hpp"
#include "kiln/error.hpp"
#include "kiln/linalg.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

TEST(NoCublas, MatmulIsUnavailableAndSaysWhy) {
    std::string reason;
    EXPECT_FALSE(kiln::matmul_available(&reason));
    EXPECT_NE(reason.find("/nonexistent/libcublas.so"), std::string::npos) << reason;
    EXPECT_NE(reason.find("KILN_CUBLAS_LIBRARY"), std::string::npos) << reason;
}

TEST(NoCublas, MatmulThrowsTheReasonBeforeTouchingTheDevice) {
    // Addresses never read: the error must come before any allocation or launch.
    const kiln::Array a = kiln::Array::wrap(0x1000, {2, 3}, kiln::DType::float32, {}, nullptr, 0);
    const kiln::Array b = kiln::Array::wrap(0x1000, {3, 2}, kiln::DType::float32, {}, nullptr, 0);
    try {
        kiln::matmul(a, b);
        FAIL() << "matmul ran without cuBLAS";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("kiln::matmul needs cuBLAS"), std::string::npos)
            << e.what();
        EXPECT_NE(std::string(e.what()).find("/nonexistent/libcublas.so"), std::string::npos)
            << e.what();
    }
    // Shape errors still come first: they need no library.
    EXPECT_THROW(kiln::matmul(a, a), kiln::ShapeError);
}

TEST(NoCublas, DiagonalStillWorks) {
    const kiln::Array a = kiln::Array::wrap(0x1000, {3, 3}, kiln::DType::float32, {}, nullptr, 0);
    EXPECT_EQ(kiln::diagonal(a).shape(), kiln::Dims({3}));
}

} // namespace
