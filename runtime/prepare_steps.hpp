#pragma once
// The parts of kiln::prepare() (kiln/startup.hpp) that Kiln's own libraries use: adding a step,
// and running prepare() beside the driver's loading.

#include "kiln/startup.hpp"

#include <thread>

namespace kiln {

namespace detail {

/// Adds a step to prepare() (a library's own one-time work). Call before prepare() runs: from a
/// static initializer.
void add_prepare_step(void (*step)()) noexcept;

/// Runs prepare() on a second thread for the lifetime of the object (joined by the destructor),
/// or not at all when no thread can be started.
class PrepareAlongside {
  public:
    PrepareAlongside() noexcept;
    ~PrepareAlongside();
    PrepareAlongside(const PrepareAlongside&) = delete;
    PrepareAlongside& operator=(const PrepareAlongside&) = delete;

  private:
    std::thread m_thread;
};

} // namespace detail

} // namespace kiln
