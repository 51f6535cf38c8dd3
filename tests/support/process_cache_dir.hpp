#pragma once
// A fresh temporary cache directory for tests that go through the process-wide objects
// (Compiler::global() over cache::Store::global(), which reads KILN_CACHE_DIR once, on first use).
// Register it before RUN_ALL_TESTS:
//     const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new ProcessCacheDir);
// CTest runs every TEST in a process of its own, so there each test gets its own directory; a
// binary run by hand shares one among its tests.

#include "temp_dir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

namespace kiln::test {

class ProcessCacheDir : public ::testing::Environment {
  public:
    void SetUp() override {
        m_dir = std::make_unique<TempDir>();
        ::setenv("KILN_CACHE_DIR", m_dir->path().c_str(), 1);
    }
    void TearDown() override { m_dir.reset(); }

  private:
    std::unique_ptr<TempDir> m_dir;
};

} // namespace kiln::test
