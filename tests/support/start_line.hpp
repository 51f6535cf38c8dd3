#pragma once
// Lets the threads of a concurrency test start together, so that their first requests (and so
// their compiles, loads and launches) really overlap instead of running one after another.

#include <atomic>
#include <thread>

namespace kiln::test {

class StartLine {
  public:
    explicit StartLine(int threads)
        : m_waiting(threads) {}
    /// Called once by each of the threads: returns when all of them have arrived.
    void arrive_and_wait() {
        m_waiting.fetch_sub(1);
        while (m_waiting.load() > 0)
            std::this_thread::yield();
    }

  private:
    std::atomic<int> m_waiting;
};

} // namespace kiln::test
