// A repeated call allocates nothing on the heap with its output given, and with its output
// allocated only that output's owner (issue 16). This executable replaces the global operator new
// and counts, on the test's own thread only, the allocations made during the second call of each
// front end; the first call compiles, loads and fills the caches, and everything GoogleTest does
// stays outside the counted region.
//
// Built twice: test_hot_path_allocations runs on a GPU; test_hot_path_allocations_fake_driver runs
// the same calls over the fake driver (tests/support/fake_driver.cpp), so CI on machines without
// a GPU catches a regression too. With an allocated output the count is 1: the output's owner,
// a DeviceBuffer made together with its shared_ptr control block (one make_shared); its memory
// comes from the driver's stream-ordered pool, not the heap.

#include "driver/driver.hpp"
#include "gpu.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

thread_local bool t_counting = false;
thread_local long t_allocations = 0;

void* counted(std::size_t size, std::size_t alignment) {
    if (t_counting) ++t_allocations;
    void* p = nullptr;
    if (alignment <= alignof(std::max_align_t))
        p = std::malloc(size ? size : 1);
    else if (posix_memalign(&p, alignment, size ? size : 1) != 0)
        p = nullptr;
    return p;
}

void* counted_or_throw(std::size_t size, std::size_t alignment) {
    void* p = counted(size, alignment);
    if (!p) throw std::bad_alloc();
    return p;
}

} // namespace

void* operator new(std::size_t size) {
    return counted_or_throw(size, 0);
}
void* operator new[](std::size_t size) {
    return counted_or_throw(size, 0);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return counted_or_throw(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return counted_or_throw(size, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    return counted(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    return counted(size, 0);
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return counted(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return counted(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}

// One source, two executables: distinct suite names keep the CTest names apart.
#ifdef KILN_HOT_PATH_FAKE_DRIVER
#define KILN_HOT_PATH_SUITE HotPathAllocationsFakeDriver
#else
#define KILN_HOT_PATH_SUITE HotPathAllocations
#endif

namespace {

using kiln::Array;
using kiln::DType;

// Heap allocations on this thread during the second of two calls of @p call (its result
// destroyed inside the region: freeing is not counted).
template <class Call> long allocations_on_second_call(Call&& call) {
    call(); // compiles, loads, sizes workspaces, fills the per-context caches and the pool
    t_allocations = 0;
    t_counting = true;
    call();
    t_counting = false;
    return t_allocations;
}

// The operands, made once and shared by the cases: 1024 float32 elements and a 32 x 1024 matrix.
struct Operands {
    kiln::Stream stream;
    Array x = kiln::zeros({1024}, DType::float32, stream);
    Array y = kiln::zeros({1024}, DType::float32, stream);
    Array z = kiln::empty({1024}, DType::float32, stream);
    Array matrix = kiln::zeros({32, 1024}, DType::float32, stream);
    Array rows = kiln::empty({32}, DType::float32, stream);
};

Operands& operands() {
    static Operands* made = new Operands;
    return *made;
}

const kiln::ElementwiseKernel& fma3() {
    static const kiln::ElementwiseKernel k("T x, T y, T b", "T z", "z = x * y + b", "fma3");
    return k;
}

const kiln::ReductionKernel& l2norm() {
    static const kiln::ReductionKernel k("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0",
                                         "l2norm");
    return k;
}

// The floor the other cases stand on: the driver's own launch and stream-ordered allocation.
// Should a driver allocate through the global operator new, every count below would include it.
TEST(KILN_HOT_PATH_SUITE, DriverLaunchAndAllocationAllocateNothing) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    kiln::RawKernel kernel(
        "extern \"C\" __global__ void empty(float* p, int n) { if (n < 0) p[0] = 0; }", "empty");
    kernel({1}, {32}, o.x.data<float>(), 1);
    CUfunction function = kernel.function().handle();
    float* p = o.x.data<float>();
    int n = 1;
    void* args[] = {&p, &n};
    const auto& d = kiln::detail::driver();
    CUresult results[3] = {};
    EXPECT_EQ(allocations_on_second_call([&] {
                  CUdeviceptr block = 0;
                  results[0] = d.cuMemAllocAsync(&block, 4096, o.stream.get());
                  results[1] = d.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, o.stream.get(),
                                                args, nullptr);
                  results[2] = d.cuMemFreeAsync(block, o.stream.get());
              }),
              0);
    for (CUresult result : results)
        EXPECT_EQ(result, CUDA_SUCCESS);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, RawKernelAndFunctionAllocateNothing) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    kiln::RawKernel kernel(
        "extern \"C\" __global__ void empty(float* p, int n) { if (n < 0) p[0] = 0; }", "empty");
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, o.stream};
    float* p = o.x.data<float>();
    EXPECT_EQ(allocations_on_second_call([&] { kernel(config, p, 1); }), 0);
    const kiln::Function& function = kernel.function();
    EXPECT_EQ(allocations_on_second_call([&] { function.launch(config, p, 1); }), 0);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ElementwiseKernelOutputGivenAllocatesNothing) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    const kiln::CallOptions options{o.stream, {}, {}};
    EXPECT_EQ(allocations_on_second_call([&] { fma3()(options, o.x, o.y, 1.0f, o.z); }), 0);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ElementwiseKernelOutputAllocatedAllocatesOnlyItsOwner) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    const kiln::CallOptions options{o.stream, {}, {}};
    std::int64_t size = 0;
    EXPECT_EQ(allocations_on_second_call([&] { size = fma3()(options, o.x, o.y, 1.0f)[0].size(); }),
              1);
    EXPECT_EQ(size, 1024);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ReductionKernelOutputGivenAllocatesNothing) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    const kiln::ReduceCall how{1, false, o.stream};
    EXPECT_EQ(allocations_on_second_call([&] { l2norm()(how, o.matrix, o.rows); }), 0);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ReductionKernelOutputAllocatedAllocatesOnlyItsOwner) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    const kiln::ReduceCall how{1, false, o.stream};
    std::int64_t size = 0;
    EXPECT_EQ(allocations_on_second_call([&] { size = l2norm()(how, o.matrix)[0].size(); }), 1);
    EXPECT_EQ(size, 32);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ReadyOperationOutputGivenAllocatesNothing) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    kiln::OpOptions options;
    options.stream = o.stream;
    options.out = &o.z;
    EXPECT_EQ(allocations_on_second_call([&] { kiln::add(o.x, o.y, options); }), 0);
    EXPECT_EQ(allocations_on_second_call([&] { kiln::multiply(o.x, 2.0f, options); }), 0);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ReadyOperationOutputAllocatedAllocatesOnlyItsOwner) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    kiln::OpOptions options;
    options.stream = o.stream;
    std::int64_t size = 0;
    EXPECT_EQ(allocations_on_second_call([&] { size = kiln::add(o.x, o.y, options).size(); }), 1);
    EXPECT_EQ(size, 1024);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ReadyReductionOutputGivenAllocatesNothing) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    kiln::ReduceOptions options;
    options.stream = o.stream;
    options.out = &o.rows;
    EXPECT_EQ(allocations_on_second_call([&] { kiln::sum(o.matrix, 1, options); }), 0);
    o.stream.synchronize();
}

TEST(KILN_HOT_PATH_SUITE, ReadyReductionOutputAllocatedAllocatesOnlyItsOwner) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    kiln::ReduceOptions options;
    options.stream = o.stream;
    std::int64_t size = 0;
    EXPECT_EQ(allocations_on_second_call([&] { size = kiln::sum(o.matrix, 1, options).size(); }),
              1);
    EXPECT_EQ(size, 32);
    // To a scalar: split across blocks, through the reduction workspace (kept per stream).
    EXPECT_EQ(allocations_on_second_call([&] { size = kiln::sum(o.matrix, {}, options).size(); }),
              1);
    EXPECT_EQ(size, 1);
    o.stream.synchronize();
}

// A stream the program made itself (a StreamRef over its CUstream), which Kiln never sees end.
struct ProgramStream {
    CUstream handle = nullptr;
    ProgramStream() {
        EXPECT_EQ(kiln::detail::driver().cuStreamCreate(&handle, CU_STREAM_NON_BLOCKING),
                  CUDA_SUCCESS);
        operands().stream.synchronize(); // the operands are ready before this stream reads them
    }
    ~ProgramStream() {
        kiln::detail::driver().cuStreamSynchronize(handle);
        kiln::detail::driver().cuStreamDestroy(handle);
    }
};

// The event a block kept for such a stream carries comes from the thread's pool: a repeated call
// there allocates only its output's owner too, a split reduction's workspace included.
TEST(KILN_HOT_PATH_SUITE, OnAProgramsStreamOutputAllocatedAllocatesOnlyItsOwner) {
    KILN_REQUIRE_GPU();
    Operands& o = operands();
    const ProgramStream stream;
    const kiln::CallOptions options{stream.handle, {}, {}};
    EXPECT_EQ(allocations_on_second_call([&] { fma3()(options, o.x, o.y, 1.0f); }), 1);
    kiln::ReduceOptions reduce;
    reduce.stream = stream.handle;
    EXPECT_EQ(allocations_on_second_call([&] { kiln::sum(o.matrix, 1, reduce); }), 1);
    EXPECT_EQ(allocations_on_second_call([&] { kiln::sum(o.matrix, {}, reduce); }), 1);
}

} // namespace

#ifdef KILN_HOT_PATH_FAKE_DRIVER

#include <dlfcn.h>

namespace {

// Driver calls on a repeated call, counted by the fake driver per entry point: each real one costs
// 50-300 ns of host time (an allocation or a free about a microsecond), as much as Kiln's own work.
struct DriverCalls {
    unsigned long long get_current = 0, set_current = 0, get_device = 0, launches = 0, allocs = 0,
                       frees = 0, stream_ids = 0, other = 0;
};

using CallsFunction = unsigned long long (*)(const char*);

CallsFunction fake_driver_calls() {
    if (!kiln::detail::driver_available()) return nullptr; // loads it: a test may run alone
    const char* library = std::getenv("KILN_DRIVER_LIBRARY");
    void* handle = library ? dlopen(library, RTLD_NOW | RTLD_NOLOAD) : nullptr;
    return handle ? reinterpret_cast<CallsFunction>(dlsym(handle, "kiln_fake_driver_calls"))
                  : nullptr;
}

DriverCalls driver_calls_now() {
    static const CallsFunction calls = fake_driver_calls();
    DriverCalls now;
    if (!calls) return now;
    now.get_current = calls("cuCtxGetCurrent");
    now.set_current = calls("cuCtxSetCurrent");
    now.get_device = calls("cuCtxGetDevice");
    now.launches = calls("cuLaunchKernel");
    now.allocs = calls("cuMemAllocAsync");
    now.frees = calls("cuMemFreeAsync");
    now.stream_ids = calls("cuStreamGetId");
    for (const char* name : {"cuDevicePrimaryCtxGetState", "cuStreamIsCapturing",
                             "cuDeviceGetAttribute", "cuFuncGetAttribute", "cuEventRecord",
                             "cuMemsetD8Async", "cuMemcpyDtoDAsync", "cuDeviceGetDefaultMemPool"})
        now.other += calls(name);
    return now;
}

// The driver calls made by the second of two calls of @p call, its result released inside.
template <class Call> DriverCalls driver_calls_on_second_call(Call&& call) {
    call();
    const DriverCalls before = driver_calls_now();
    call();
    const DriverCalls after = driver_calls_now();
    return {after.get_current - before.get_current, after.set_current - before.set_current,
            after.get_device - before.get_device,   after.launches - before.launches,
            after.allocs - before.allocs,           after.frees - before.frees,
            after.stream_ids - before.stream_ids,   after.other - before.other};
}

// One cuCtxGetCurrent (the context, reused by the device check and the launch) and the launch,
// nothing else. Allocated: no allocation or free either (the output's block is the one the first
// call's released result left in the thread's block cache, and the second's goes back there),
// only a cuStreamIsCapturing at each (a captured stream's memory must be the graph's). A
// kiln::Stream is known without asking its id.
void expect_calls(const DriverCalls& calls, bool allocated) {
    SCOPED_TRACE(allocated ? "allocated" : "given");
    EXPECT_EQ(calls.launches, 1u);
    EXPECT_EQ(calls.get_current, 1u);
    EXPECT_EQ(calls.set_current, 0u);
    EXPECT_EQ(calls.get_device, 0u);
    EXPECT_EQ(calls.allocs, 0u);
    EXPECT_EQ(calls.frees, 0u);
    EXPECT_EQ(calls.stream_ids, 0u);
    EXPECT_EQ(calls.other, allocated ? 2u : 0u);
}

TEST(HotPathDriverCallsFakeDriver, CountsAreAvailable) {
    ASSERT_NE(fake_driver_calls(), nullptr) << "KILN_DRIVER_LIBRARY must name the fake driver";
}

TEST(HotPathDriverCallsFakeDriver, ElementwiseKernel) {
    Operands& o = operands();
    const kiln::CallOptions options{o.stream, {}, {}};
    {
        SCOPED_TRACE("output given");
        expect_calls(driver_calls_on_second_call([&] { fma3()(options, o.x, o.y, 1.0f, o.z); }),
                     false);
    }
    SCOPED_TRACE("output allocated");
    expect_calls(driver_calls_on_second_call([&] { fma3()(options, o.x, o.y, 1.0f); }), true);
}

TEST(HotPathDriverCallsFakeDriver, ReductionKernel) {
    Operands& o = operands();
    const kiln::ReduceCall how{1, false, o.stream};
    {
        SCOPED_TRACE("output given");
        expect_calls(driver_calls_on_second_call([&] { l2norm()(how, o.matrix, o.rows); }), false);
    }
    SCOPED_TRACE("output allocated");
    expect_calls(driver_calls_on_second_call([&] { l2norm()(how, o.matrix); }), true);
}

TEST(HotPathDriverCallsFakeDriver, ReadyOperationAndReduction) {
    Operands& o = operands();
    kiln::OpOptions op;
    op.stream = o.stream;
    kiln::ReduceOptions reduce;
    reduce.stream = o.stream;
    {
        SCOPED_TRACE("add, output allocated");
        expect_calls(driver_calls_on_second_call([&] { kiln::add(o.x, o.y, op); }), true);
    }
    {
        SCOPED_TRACE("sum over an axis, output allocated");
        expect_calls(driver_calls_on_second_call([&] { kiln::sum(o.matrix, 1, reduce); }), true);
    }
    op.out = &o.z;
    reduce.out = &o.rows;
    {
        SCOPED_TRACE("add, output given");
        expect_calls(driver_calls_on_second_call([&] { kiln::add(o.x, o.y, op); }), false);
    }
    SCOPED_TRACE("sum over an axis, output given");
    expect_calls(driver_calls_on_second_call([&] { kiln::sum(o.matrix, 1, reduce); }), false);
}

// On a program's own stream an allocated output costs, in place of an allocation and a free, one
// cuStreamGetId (the stream told apart from any stream made later at its handle) and one
// cuEventRecord (the point after which its block may be freed elsewhere, should the stream end).
TEST(HotPathDriverCallsFakeDriver, OnAProgramsStream) {
    Operands& o = operands();
    const ProgramStream stream;
    const kiln::CallOptions options{stream.handle, {}, {}};
    for (const bool allocated : {false, true}) {
        SCOPED_TRACE(allocated ? "allocated" : "given");
        const DriverCalls calls = driver_calls_on_second_call([&] {
            if (allocated)
                fma3()(options, o.x, o.y, 1.0f);
            else
                fma3()(options, o.x, o.y, 1.0f, o.z);
        });
        EXPECT_EQ(calls.launches, 1u);
        EXPECT_EQ(calls.get_current, 1u);
        EXPECT_EQ(calls.allocs, 0u);
        EXPECT_EQ(calls.frees, 0u);
        EXPECT_EQ(calls.stream_ids, allocated ? 1u : 0u);
        EXPECT_EQ(calls.other, allocated ? 3u : 0u); // two capture checks and the record
    }
}

// Occupancy sizes only a split: the first call of a reduction that can never split does not ask
// the driver for it (10 us of a fresh process's first reduction call on an H200); one that can
// split asks once, when its kernel loads.
TEST(HotPathDriverCallsFakeDriver, OnlyAReductionThatCanSplitAsksForOccupancy) {
    static const CallsFunction calls = fake_driver_calls();
    ASSERT_NE(calls, nullptr);
    Operands& o = operands();
    const auto queries = [&](auto&& call) {
        const auto before = calls("cuOccupancyMaxActiveBlocksPerMultiprocessor");
        call();
        return calls("cuOccupancyMaxActiveBlocksPerMultiprocessor") - before;
    };
    const kiln::ReductionKernel sum("T x", "T y", "x", "a + b", "y = a", "0", "occupancy_probe");
    // Rows of 1024 floats: a block per row, never split.
    EXPECT_EQ(queries([&] { sum(kiln::ReduceCall{1, false, o.stream}, o.matrix, o.rows); }), 0u);
    // Everything to one value: 8192 vectors, which can split.
    EXPECT_EQ(queries([&] { (void)sum(kiln::ReduceCall{{}, false, o.stream}, o.matrix); }), 1u);
    EXPECT_EQ(queries([&] {
                  (void)sum(kiln::ReduceCall{{}, false, o.stream}, o.matrix);
              }),
              0u)
        << "asked again on a later call";
}

// A call asks the driver for the current context once and keeps the answer while it runs, through
// Kiln's own switches; between calls the application may switch, so the next call asks again.
TEST(HotPathDriverCallsFakeDriver, CallKnowsItsContextOnlyWhileItRuns) {
    namespace kd = kiln::detail;
    const auto& d = kd::driver();
    const CUcontext primary = kd::current_context();
    const DriverCalls before = driver_calls_now();
    {
        const kd::CallContextScope call;
        EXPECT_EQ(kd::current_context(), primary);
        EXPECT_EQ(kd::current_context(), primary);
        EXPECT_EQ(kd::current_device_ordinal(), 0);
        EXPECT_EQ(kd::current_context_or_null(), primary);
    }
    EXPECT_EQ(driver_calls_now().get_current - before.get_current, 1u);

    int storage = 0; // the fake driver never reads a context: any distinct address will do
    const auto other = reinterpret_cast<CUcontext>(&storage);
    ASSERT_EQ(d.cuCtxSetCurrent(other), CUDA_SUCCESS);
    {
        const kd::CallContextScope call;
        EXPECT_EQ(kd::current_context(), other);
        {
            const kiln::DeviceGuard on(0);
            EXPECT_EQ(kd::current_context(), primary);
        }
        EXPECT_EQ(kd::current_context(), other);
        // After code outside Kiln, such as an application's allocator, the call asks again.
        ASSERT_EQ(d.cuCtxSetCurrent(primary), CUDA_SUCCESS);
        kd::forget_current_context();
        EXPECT_EQ(kd::current_context(), primary);
    }
    ASSERT_EQ(d.cuCtxSetCurrent(other), CUDA_SUCCESS);
    EXPECT_EQ(kd::current_context(), other);
    ASSERT_EQ(d.cuCtxSetCurrent(primary), CUDA_SUCCESS);
    EXPECT_EQ(kd::current_context(), primary);
}

} // namespace

#endif
