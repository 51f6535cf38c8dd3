// RawModule / RawKernel features on the GPU: module globals (a __constant__ table written from the
// host, __device__ variables read back), kernel attributes, their setters and occupancy, and
// relocatable device code whose kernels launch kernels. Outputs are poisoned first and checked
// against values computed on the host.

#include "gpu.hpp"
#include "temp_dir.hpp"

#include "kiln/kiln.hpp"

#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace {

std::mt19937& rng() {
    static std::mt19937 engine(std::random_device{}());
    return engine;
}

kiln::DeviceBuffer poisoned(std::size_t bytes, kiln::StreamRef stream = {}) {
    kiln::DeviceBuffer buffer(bytes, stream);
    buffer.fill_bytes(0xff);
    return buffer;
}

template <class T> std::vector<T> download(const kiln::DeviceBuffer& buffer) {
    std::vector<T> host(buffer.size() / sizeof(T));
    buffer.copy_to_host(host.data(), buffer.size());
    return host;
}

constexpr const char* kTable = R"(
__constant__ float table[16];
__device__ int counter;
__device__ double scale = 2.0;
namespace ns { __device__ int value; }
extern "C" __global__ void apply(const int* index, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = table[index[i] & 15] * scale;
        atomicAdd(&counter, 1);
    }
}
extern "C" __global__ void add_to(int* target, int amount) { atomicAdd(target, amount); }
extern "C" __global__ void copy_value(int* out) { *out = ns::value; }
)";

} // namespace

TEST(ModuleGlobals, AConstantTableWrittenFromTheHostIsReadByAKernel) {
    KILN_REQUIRE_GPU();
    kiln::Stream stream;
    kiln::RawModule module(kTable);
    auto table = module.get_global("table");
    EXPECT_EQ(table.name(), "table");
    EXPECT_EQ(table.bytes(), 16 * sizeof(float));
    EXPECT_NE(table.ptr(), CUdeviceptr{0});

    std::uniform_real_distribution<float> values(-100.f, 100.f);
    std::vector<float> host_table(16);
    for (auto& v : host_table)
        v = values(rng());
    table.copy_from_host(host_table, stream);
    module.get_global("counter").copy_from_host(0, stream);

    const int n = 10007;
    std::uniform_int_distribution<int> indices(0, 1000);
    std::vector<int> index(n);
    for (auto& i : index)
        i = indices(rng());
    kiln::DeviceBuffer d_index(n * sizeof(int), stream);
    d_index.copy_from_host(index.data(), d_index.size(), stream);
    auto out = poisoned(n * sizeof(float), stream);
    module.get_function("apply")(kiln::LaunchConfig{{(n + 255) / 256}, {256}, 0, stream},
                                 d_index.data<int>(), out.data<float>(), n);

    int counted = -1;
    module.get_global("counter").copy_to_host(counted, stream); // waits for the stream
    EXPECT_EQ(counted, n);
    std::vector<float> result(n);
    out.copy_to_host(result.data(), out.size(), stream);
    stream.synchronize();
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], static_cast<float>(double{host_table[index[i] & 15]} * 2.0)) << i;

    // Read back: the table as written, and an initialized __device__ variable.
    std::array<float, 16> back{};
    table.copy_to_host(back, stream);
    EXPECT_TRUE(std::equal(back.begin(), back.end(), host_table.begin()));
    double scale = 0;
    module.get_global("scale").copy_to_host(scale);
    EXPECT_EQ(scale, 2.0);
}

TEST(ModuleGlobals, AGlobalsAddressIsAKernelArgumentAndItsValueReadsBack) {
    KILN_REQUIRE_GPU();
    kiln::RawModule module(kTable);
    auto counter = module.get_global("counter");
    counter.copy_from_host(std::int32_t{40});
    module.get_function("add_to")({1}, {2}, counter.ptr(), 1);
    std::int32_t value = 0;
    counter.copy_to_host(value);
    EXPECT_EQ(value, 42);
}

TEST(ModuleGlobals, ANamespacedVariableIsFoundByItsNameExpression) {
    KILN_REQUIRE_GPU();
    kiln::RawModule module(kTable, {}, {"&ns::value"});
    module.get_global("&ns::value").copy_from_host(1234);
    auto out = poisoned(sizeof(int));
    module.get_function("copy_value")({1}, {1}, out.data<int>());
    EXPECT_EQ(download<int>(out).at(0), 1234);
    EXPECT_EQ(module.get_global("ns::value").ptr(), module.get_global("&ns::value").ptr());
}

TEST(ModuleGlobals, AnUnknownNameListsTheGlobalsAndAWrongSizeIsRefused) {
    KILN_REQUIRE_GPU();
    kiln::RawModule module(kTable);
    try {
        module.get_global("tabel");
        FAIL() << "found a variable that does not exist";
    } catch (const kiln::ArgumentError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("'tabel'"), std::string::npos) << what;
        EXPECT_NE(what.find("table"), std::string::npos) << what;
        EXPECT_NE(what.find("counter"), std::string::npos) << what;
    }
    auto table = module.get_global("table");
    try {
        table.copy_from_host(std::vector<float>(15));
        FAIL() << "copied 60 bytes into a 64-byte table";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("64 bytes"), std::string::npos) << e.what();
    }
    double too_big = 0;
    EXPECT_THROW(module.get_global("counter").copy_from_host(too_big), kiln::ArgumentError);
    std::vector<float> too_small(4);
    EXPECT_THROW(table.copy_to_host(too_small), kiln::ArgumentError);
}

namespace {

constexpr const char* kShared = R"(
extern "C" __global__ void uses_shared(float* out) {
    __shared__ float tile[1024];
    tile[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x];
}
extern "C" __global__ void reverse_dynamic(const float* in, float* out, int n) {
    extern __shared__ float buffer[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buffer[i] = in[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buffer[n - 1 - i];
}
)";

} // namespace

TEST(KernelAttributes, ReportTheKernelsResources) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel kernel(kShared, "uses_shared");
    const kiln::KernelAttributes a = kernel.attributes(); // compiles and loads
    EXPECT_EQ(a.shared_size_bytes, 1024 * sizeof(float));
    EXPECT_GT(a.num_regs, 0);
    EXPECT_GT(a.max_threads_per_block, 0);
    EXPECT_LE(a.max_threads_per_block, 1024);
    EXPECT_EQ(a.max_threads_per_block, kernel.function().max_threads_per_block());
    const kiln::Device device = kiln::Device::current();
    EXPECT_EQ(a.binary_version,
              device.compute_capability_major() * 10 + device.compute_capability_minor());
    EXPECT_GT(a.ptx_version, 0);
    EXPECT_EQ(a.local_size_bytes, 0u);
    EXPECT_GT(kernel.max_active_blocks_per_multiprocessor(256), 0);
    EXPECT_GT(kernel.max_active_blocks_per_multiprocessor(128, 1024), 0);
}

TEST(KernelAttributes, RaisingMaxDynamicSharedLetsALargeLaunchRun) {
    KILN_REQUIRE_GPU();
    const int optin =
        kiln::Device::current().attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    constexpr int kBytes = 64 * 1024;
    if (optin < kBytes) GTEST_SKIP() << "the device allows " << optin << " bytes of shared memory";
    kiln::RawKernel kernel(kShared, "reverse_dynamic");
    kernel.set_max_dynamic_shared_size_bytes(kBytes);
    EXPECT_EQ(kernel.attributes().max_dynamic_shared_size_bytes, std::size_t{kBytes});
    EXPECT_THROW(kernel.set_max_dynamic_shared_size_bytes(optin + 1), kiln::ArgumentError);

    const int n = kBytes / static_cast<int>(sizeof(float));
    std::vector<float> in(n);
    for (int i = 0; i < n; ++i)
        in[i] = static_cast<float>(i) * 0.5f;
    kiln::DeviceBuffer d_in(n * sizeof(float));
    d_in.copy_from_host(in.data(), d_in.size());
    auto out = poisoned(n * sizeof(float));
    kernel(kiln::LaunchConfig{{1}, {256}, kBytes}, d_in.data<float>(), out.data<float>(), n);
    const auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], in[n - 1 - i]) << i;
    EXPECT_GT(kernel.max_active_blocks_per_multiprocessor(256, kBytes), 0);
}

TEST(KernelAttributes, TheCarveoutIsSetAndCheckedAsAPercentage) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel kernel(kShared, "uses_shared");
    kernel.set_preferred_shared_memory_carveout(50);
    EXPECT_EQ(kernel.attributes().preferred_shared_memory_carveout, 50);
    EXPECT_THROW(kernel.set_preferred_shared_memory_carveout(101), kiln::ArgumentError);
    EXPECT_THROW(kernel.set_preferred_shared_memory_carveout(-2), kiln::ArgumentError);
}

namespace {

constexpr const char* kParentChild = R"(
extern "C" __global__ void child(int* out, int base, int factor) {
    out[base + threadIdx.x] = factor * (base + threadIdx.x);
}
extern "C" __global__ void parent(int* out, int factor) {
    if (threadIdx.x == 0) child<<<1, 32>>>(out, blockIdx.x * 32, factor);
}
)";

// CuPy's own dynamic-parallelism test, whose kernel names made the old error message look
// contradictory.
constexpr const char* kCupyStyle = R"(
extern "C" __global__ void test_kernel_inner(float* arr, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) arr[i] = 2.0f * i;
}
extern "C" __global__ void test_kernel(float* arr, int n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) test_kernel_inner<<<(n + 63) / 64, 64>>>(arr, n);
}
)";

} // namespace

TEST(DeviceLaunch, AParentKernelLaunchesChildKernels) {
    KILN_REQUIRE_GPU();
    for (const char* option : {"-dc", "-rdc=true"}) {
        SCOPED_TRACE(option);
        const int blocks = 64, n = blocks * 32;
        auto out = poisoned(n * sizeof(int));
        kiln::RawKernel parent(kParentChild, "parent", {option});
        parent({blocks}, {32}, out.data<int>(), 3);
        const auto result = download<int>(out); // the parent grid ends after its children
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(result[i], 3 * i) << i;
    }
}

TEST(DeviceLaunch, CupysDynamicParallelismKernelRuns) {
    KILN_REQUIRE_GPU();
    const int n = 1000;
    auto out = poisoned(n * sizeof(float));
    kiln::RawModule module(kCupyStyle, {"-dc"});
    module.get_function("test_kernel")({1}, {1}, out.data<float>(), n);
    const auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], 2.0f * static_cast<float>(i)) << i;
}

namespace {

// A relocatable cubin as a toolchain outside Kiln makes it, not linked.
std::string relocatable_cubin(const char* source, const std::string& arch) {
    nvrtcProgram program = nullptr;
    EXPECT_EQ(nvrtcCreateProgram(&program, source, "part.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
    const std::string arch_option = "-arch=" + arch;
    const char* options[] = {arch_option.c_str(), "-dc"};
    EXPECT_EQ(nvrtcCompileProgram(program, 2, options), NVRTC_SUCCESS);
    std::size_t size = 0;
    nvrtcGetCUBINSize(program, &size);
    std::string cubin(size, '\0');
    nvrtcGetCUBIN(program, cubin.data());
    nvrtcDestroyProgram(&program);
    return cubin;
}

} // namespace

TEST(DeviceLaunch, AUserDeviceLibraryIsLinkedIn) {
    KILN_REQUIRE_GPU();
    const std::string arch = kiln::Device::current().arch();
    kiln::CompileOptions options{"-dc"};
    options.link_inputs = {kiln::LinkInput::from_bytes(
        "helper.cubin",
        relocatable_cubin(R"(extern "C" __device__ int helper(int x) { return 3 * x + 7; })",
                          arch))};
    kiln::RawKernel kernel(R"(
extern "C" __device__ int helper(int x);
extern "C" __global__ void use_helper(int* out) { out[threadIdx.x] = helper(threadIdx.x); }
)",
                           "use_helper", options);
    auto out = poisoned(64 * sizeof(int));
    kernel({1}, {64}, out.data<int>());
    const auto result = download<int>(out);
    for (int i = 0; i < 64; ++i)
        ASSERT_EQ(result[i], 3 * i + 7) << i;
}

TEST(DeviceLaunch, AnUnlinkedRelocatableCubinIsNotReportedAsMissingItsKernel) {
    KILN_REQUIRE_GPU();
    kiln::test::TempDir dir;
    const auto path = dir.path() / "parent.cubin";
    std::ofstream(path, std::ios::binary)
        << relocatable_cubin(kParentChild, kiln::Device::current().arch());
    try {
        auto module = kiln::RawModule::from_file(path.string());
        module.get_function("parent").function();
        // A driver may resolve nothing lazily and load it; then the kernel must be there.
    } catch (const kiln::ArgumentError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.find("no kernel named"), std::string::npos) << what;
    } catch (const kiln::CudaError&) {
        // Refused at load time (eager loading): not the contradictory message either.
    }
}
