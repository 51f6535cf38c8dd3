// The kernels' public headers keep internals out: implementation types are not reachable by
// users, options that do nothing do not exist, and no header pulls in the runtime's internals
// (kiln/detail/) or the machinery of an implementation (atomics, mutexes).

#include "kiln/elementwise_kernel.hpp"
#include "kiln/raw_kernel.hpp"
#include "kiln/reduction_kernel.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

// Whether T::Impl / T::State name a type this code may use (access is checked in SFINAE).
template <class T, class = void> struct ImplIsReachable : std::false_type {};
template <class T> struct ImplIsReachable<T, std::void_t<typename T::Impl>> : std::true_type {};
template <class T, class = void> struct StateIsReachable : std::false_type {};
template <class T> struct StateIsReachable<T, std::void_t<typename T::State>> : std::true_type {};

template <class T, class = void> struct HasReturnTuple : std::false_type {};
template <class T>
struct HasReturnTuple<T, std::void_t<decltype(&T::return_tuple)>> : std::true_type {};

std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

} // namespace

TEST(PublicHeaders, ImplementationTypesAreNotReachable) {
    EXPECT_FALSE(ImplIsReachable<kiln::ElementwiseKernel>::value);
    EXPECT_FALSE(ImplIsReachable<kiln::ReductionKernel>::value);
    EXPECT_FALSE(StateIsReachable<kiln::RawModule>::value);
    EXPECT_FALSE(StateIsReachable<kiln::RawKernel>::value);
}

TEST(PublicHeaders, ElementwiseOptionsHoldNoSwitchThatDoesNothing) {
    // return_tuple was never read: Outputs always holds every output.
    EXPECT_FALSE(HasReturnTuple<kiln::ElementwiseOptions>::value);
}

TEST(PublicHeaders, IncludeNoInternalsOfTheRuntimeNorSynchronization) {
    // kernels/include/kiln (kiln.hpp) and each front end's folder of public headers.
    const std::filesystem::path source = KILN_KERNELS_SOURCE;
    std::vector<std::filesystem::path> dirs = {source / "include" / "kiln"};
    for (const auto& folder : std::filesystem::directory_iterator(source))
        if (std::filesystem::is_directory(folder.path() / "include" / "kiln"))
            dirs.push_back(folder.path() / "include" / "kiln");
    int headers = 0;
    for (const auto& dir : dirs) {
        for (const auto& item : std::filesystem::directory_iterator(dir)) {
            if (item.path().extension() != ".hpp") continue;
            ++headers;
            SCOPED_TRACE(item.path().string());
            const std::string text = read(item.path());
            for (const char* internal :
                 {"#include \"kiln/detail/", "#include \"driver/", "#include \"core/",
                  "#include <atomic>", "#include <mutex>", "std::atomic", "std::mutex"})
                EXPECT_EQ(text.find(internal), std::string::npos) << internal;
        }
    }
    EXPECT_GT(headers, 10) << "no public header was read under " << source;
}
