// What a stream capture refuses, and what Kiln does with memory under capture, over the fake
// driver (tests/support/fake_driver.cpp), which refuses as a real driver's global mode does:
// synchronizing a captured stream, the context or the legacy stream, and freeing in the capture
// memory it did not allocate, each invalidating the capture. No GPU needed.

#include "driver/driver.hpp"
#include "kiln/graph.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using kiln::Array;
using kiln::DType;

void* fake(const char* symbol) {
    const char* library = std::getenv("KILN_DRIVER_LIBRARY");
    void* handle = library ? dlopen(library, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return handle ? dlsym(handle, symbol) : nullptr;
}

unsigned long long calls(const char* name) {
    using Calls = unsigned long long (*)(const char*);
    static const auto function = reinterpret_cast<Calls>(fake("kiln_fake_driver_calls"));
    return function ? function(name) : 0;
}

bool contains(const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
}

class GraphCaptureFakeDriver : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_NE(fake("kiln_fake_driver_calls"), nullptr) << "runs over the fake driver";
    }
    kiln::Stream stream;
    Array x = kiln::zeros({4096}, DType::float32, stream);
    Array z = kiln::empty({4096}, DType::float32, stream);
    kiln::ElementwiseKernel twice{"T x", "T z", "z = 2 * x", "fake_graph_twice"};
    kiln::CallOptions on() const {
        kiln::CallOptions options;
        options.stream = stream;
        return options;
    }
};

// A call Kiln refuses before it reaches the driver leaves the capture valid: caught inside the
// work, the capture still ends with a graph.
TEST_F(GraphCaptureFakeDriver, CopiesToAndFromTheHostAreRefusedBeforeTheDriver) {
    const std::vector<float> host(4096, 1.0f);
    const std::vector<std::pair<const char*, std::function<void()>>> refused = {
        {"kiln::Array::to_host", [&] { (void)z.to_host<float>(stream); }},
        {"kiln::Array::copy_from_host_bytes", [&] { (void)kiln::from_host(host, stream); }},
        {"kiln::DeviceBuffer::copy_to_host",
         [&] {
             const kiln::DeviceBuffer b(64, stream);
             float out[16];
             b.copy_to_host(out, sizeof out);
         }},
    };
    for (const auto& refusal : refused) { // not a structured binding: lambdas capture `call`
        const char* name = refusal.first;
        const std::function<void()>& call = refusal.second;
        SCOPED_TRACE(name);
        std::string message;
        const kiln::Graph graph = kiln::Graph::capture(stream, [&] {
            twice(on(), x, z);
            try {
                call();
            } catch (const kiln::CaptureError& e) {
                message = e.what();
            }
            twice(on(), z, x);
        });
        EXPECT_NE(graph.get(), nullptr);
        EXPECT_TRUE(contains(message, name)) << message;
        EXPECT_TRUE(contains(message, "refused by Kiln")) << message;
        EXPECT_TRUE(contains(message, "captured into a CUDA graph")) << message;
    }
}

// What the driver refuses invalidates the capture: a CaptureError naming the Kiln call, and one
// from the capture's end even when the work caught the first.
TEST_F(GraphCaptureFakeDriver, SynchronizingIsACaptureErrorNamingTheCall) {
    const std::vector<std::pair<const char*, std::function<void()>>> refused = {
        {"kiln::StreamRef::synchronize", [&] { stream.synchronize(); }},
        {"kiln::Device::synchronize", [&] { kiln::Device::current().synchronize(); }},
        {"kiln::StreamRef::synchronize", [&] { kiln::StreamRef().synchronize(); }},
    };
    for (const auto& refusal : refused) { // not a structured binding: lambdas capture `call`
        const char* name = refusal.first;
        const std::function<void()>& call = refusal.second;
        SCOPED_TRACE(name);
        try {
            kiln::Graph::capture(stream, [&] {
                twice(on(), x, z);
                call();
            });
            ADD_FAILURE() << "the capture accepted it";
        } catch (const kiln::CaptureError& e) {
            EXPECT_TRUE(contains(e.what(), name)) << e.what();
            EXPECT_TRUE(contains(e.what(), "do it before or after the capture")) << e.what();
        }
        try {
            kiln::Graph::capture(stream, [&] {
                try {
                    call();
                } catch (const kiln::CaptureError&) {
                }
            });
            ADD_FAILURE() << "an invalidated capture ended with a graph";
        } catch (const kiln::CaptureError& e) {
            EXPECT_TRUE(contains(e.what(), "kiln::Graph::capture")) << e.what();
        }
        // Neither capture is left running: the stream synchronizes again.
        EXPECT_NO_THROW(stream.synchronize());
        EXPECT_NO_THROW(twice(on(), x, z));
    }
    // Another code stays a plain CudaError.
    try {
        kiln::detail::throw_cuda_error(CUDA_ERROR_INVALID_VALUE, "cuX()", __FILE__, __LINE__);
    } catch (const kiln::CaptureError&) {
        ADD_FAILURE() << "not a capture's refusal";
    } catch (const kiln::CudaError&) {
    }
}

TEST_F(GraphCaptureFakeDriver, GraphsAreInstantiatedToFreeTheLastLaunchsAllocations) {
    using Flags = unsigned long long (*)();
    const auto flags = reinterpret_cast<Flags>(fake("kiln_fake_driver_last_instantiate_flags"));
    ASSERT_NE(flags, nullptr);
    Array out;
    const kiln::Graph graph = kiln::Graph::capture(stream, [&] { out = twice(on(), x)[0]; });
    const kiln::GraphExec exec = graph.instantiate();
    EXPECT_EQ(flags(),
              static_cast<unsigned long long>(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    exec.launch(stream);
    exec.launch(stream);
}

// A block made before the capture and dropped inside it: its free would be an invalid free node
// (the fake driver, like a real one, invalidates the capture); it waits for the capture's end.
TEST_F(GraphCaptureFakeDriver, ABlockMadeBeforeTheCaptureIsFreedWhenItEnds) {
    for (const std::int64_t n : {std::int64_t{1000}, std::int64_t{4} << 20}) { // kept; too large
        SCOPED_TRACE(n);
        Array w = kiln::empty({n}, DType::float32, stream);
        const unsigned long long before = calls("cuMemFreeAsync");
        unsigned long long during = 0;
        const kiln::Graph graph = kiln::Graph::capture(stream, [&] {
            w = kiln::empty({n}, DType::float32, stream); // the graph's; the old block dropped
            during = calls("cuMemFreeAsync") - before;
        });
        EXPECT_NE(graph.get(), nullptr);
        EXPECT_EQ(during, 0u) << "the old block was freed inside the capture";
        EXPECT_EQ(calls("cuMemFreeAsync") - before, 1u) << "not freed at the capture's end";
        const unsigned long long kept = calls("cuMemFreeAsync");
        w = Array(); // the graph's allocation: freed (the last launch's memory)
        EXPECT_EQ(calls("cuMemFreeAsync") - kept, 1u);
    }
}

// A reduction split across blocks gets, under capture, a workspace of the graph's own: made,
// cleared and freed by the graph around its launch, leaving the stream's untouched.
TEST_F(GraphCaptureFakeDriver, ASplitReductionUnderCaptureHasTheGraphsOwnWorkspace) {
    const Array big = kiln::zeros({1 << 22}, DType::float32, stream);
    kiln::ReduceOptions reduce;
    reduce.stream = stream;
    Array total = kiln::sum(big, {}, reduce); // loads it and makes the stream's workspace
    reduce.out = &total;
    kiln::sum(big, {}, reduce);
    const unsigned long long allocs = calls("cuMemAllocAsync"), sets = calls("cuMemsetD8Async");
    kiln::sum(big, {}, reduce);
    ASSERT_EQ(calls("cuMemAllocAsync"), allocs) << "a direct call reuses the stream's workspace";
    ASSERT_EQ(calls("cuMemsetD8Async"), sets);
    const unsigned long long frees = calls("cuMemFreeAsync");
    const kiln::Graph graph = kiln::Graph::capture(stream, [&] { kiln::sum(big, {}, reduce); });
    EXPECT_EQ(calls("cuMemAllocAsync") - allocs, 1u) << "an allocation node";
    EXPECT_EQ(calls("cuMemsetD8Async") - sets, 1u) << "the counters cleared by the graph";
    EXPECT_EQ(calls("cuMemFreeAsync") - frees, 1u) << "a free node after the launch";
    kiln::sum(big, {}, reduce);
    EXPECT_EQ(calls("cuMemAllocAsync") - allocs, 1u) << "the stream's workspace is still there";
}

} // namespace
