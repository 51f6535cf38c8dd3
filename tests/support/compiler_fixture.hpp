#pragma once
// A Compiler over a fresh cache directory of its own, per test.

#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"
#include "kiln/device.hpp"
#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace kiln::test {

inline cache::Config config_in(const std::filesystem::path& dir, bool save_source = false) {
    cache::Config config;
    config.dir = dir;
    config.save_source = save_source;
    return config;
}

class CompilerTest : public ::testing::Test {
  protected:
    TempDir m_dir;
    std::unique_ptr<cache::Store> m_store = std::make_unique<cache::Store>(config_in(m_dir.path()));
    std::unique_ptr<Compiler> m_compiler = std::make_unique<Compiler>(m_store.get());

    static CompileOptions for_arch(const char* arch = "sm_90") {
        CompileOptions options;
        options.arch = arch;
        return options;
    }
    /// A new process's view of the same directory: empty memory, same disk.
    void restart(bool save_source = false) {
        m_compiler.reset();
        m_store = std::make_unique<cache::Store>(config_in(m_dir.path(), save_source));
        m_compiler = std::make_unique<Compiler>(m_store.get());
    }
};

constexpr const char* kAddSource =
    R"(extern "C" __global__ void add(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}
)";

} // namespace kiln::test
