// main() of every Kiln test executable: applies the environment its CMake target asks for (a
// per-suite cache directory, overrides such as KILN_DRIVER_LIBRARY), then runs GoogleTest.
// Done here rather than through CTest's ENVIRONMENT so a test binary run by hand behaves alike.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    // KILN_TEST_ENV: "NAME=VALUE|NAME=VALUE"; the cache directory only when not set by the caller.
    if (!std::getenv("KILN_CACHE_DIR")) setenv("KILN_CACHE_DIR", KILN_TEST_CACHE_DIR, 1);
    const std::string env = KILN_TEST_ENV;
    std::size_t start = 0;
    while (start < env.size()) {
        std::size_t end = env.find('|', start);
        if (end == std::string::npos) end = env.size();
        const std::string item = env.substr(start, end - start);
        const std::size_t eq = item.find('=');
        if (eq != std::string::npos)
            setenv(item.substr(0, eq).c_str(), item.substr(eq + 1).c_str(), 1);
        start = end + 1;
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
