// RawKernel / RawModule on the GPU: every argument kind, shared memory, streams, cooperative
// launch, and launches that must be refused. Results are checked against the host, on fresh
// random data, with outputs poisoned first.

#include "gpu.hpp"
#include "temp_dir.hpp"

#include "driver/driver.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/kiln.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace {

std::mt19937& rng() {
    static std::mt19937 engine(std::random_device{}());
    return engine;
}

std::vector<float> random_floats(std::size_t n) {
    std::uniform_real_distribution<float> dist(-10.f, 10.f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(rng());
    return v;
}

kiln::DeviceBuffer upload(const std::vector<float>& host, kiln::StreamRef stream = {}) {
    kiln::DeviceBuffer buffer(host.size() * sizeof(float), stream);
    buffer.copy_from_host(host.data(), buffer.size(), stream);
    return buffer;
}

kiln::DeviceBuffer poisoned(std::size_t bytes, kiln::StreamRef stream = {}) {
    kiln::DeviceBuffer buffer(bytes, stream);
    buffer.fill_bytes(0xff); // NaN for floats, -1 for integers
    return buffer;
}

template <class T> std::vector<T> download(const kiln::DeviceBuffer& buffer) {
    std::vector<T> host(buffer.size() / sizeof(T));
    buffer.copy_to_host(host.data(), buffer.size());
    return host;
}

constexpr const char* kSaxpy = R"(
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
)";

} // namespace

TEST(RawKernel, LaunchesWithPointersAndScalars) {
    KILN_REQUIRE_GPU();
    const int n = 100003; // not a multiple of the block
    auto x = random_floats(n), y = random_floats(n);
    auto dx = upload(x), dy = upload(y);
    auto out = poisoned(n * sizeof(float));
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    saxpy({(n + 255) / 256}, {256}, 2.5f, dx.data<float>(), dy.data<float>(), out.data<float>(), n);
    auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], std::fma(2.5f, x[i], y[i])) << i; // NVRTC contracts to an FMA
}

TEST(RawKernel, AcceptsDeviceBuffersAsPointers) {
    KILN_REQUIRE_GPU();
    const int n = 4096;
    auto x = random_floats(n), y = random_floats(n);
    auto dx = upload(x), dy = upload(y);
    auto out = poisoned(n * sizeof(float));
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    saxpy({n / 128}, {128}, -1.0f, dx, dy, out, n);
    auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], -x[i] + y[i]);
}

namespace {
struct alignas(8) Params {
    double scale;
    std::int32_t offset;
    float weights[3];
    std::int8_t flag;
};
} // namespace

TEST(RawKernel, PassesScalarsOfEveryWidthAndStructsByValue) {
    KILN_REQUIRE_GPU();
    const char* source = R"(
struct alignas(8) Params { double scale; int offset; float weights[3]; signed char flag; };
extern "C" __global__ void scalars(signed char i8, unsigned char u8, short i16, unsigned short u16,
                                   int i32, unsigned u32, long long i64, unsigned long long u64,
                                   float f32, double f64, bool b, Params p,
                                   long long* ints, double* reals) {
    ints[0] = i8; ints[1] = u8; ints[2] = i16; ints[3] = u16; ints[4] = i32; ints[5] = u32;
    ints[6] = i64; ints[7] = (long long)u64; ints[8] = b; ints[9] = p.offset; ints[10] = p.flag;
    reals[0] = f32; reals[1] = f64; reals[2] = p.scale;
    reals[3] = p.weights[0]; reals[4] = p.weights[1]; reals[5] = p.weights[2];
}
)";
    kiln::RawKernel kernel(source, "scalars");
    auto ints = poisoned(11 * sizeof(long long));
    auto reals = poisoned(6 * sizeof(double));
    const Params p{0.125, -7, {1.5f, -2.5f, 3.25f}, -3};
    kernel({1}, {1}, std::int8_t{-1}, std::uint8_t{255}, std::int16_t{-32768}, std::uint16_t{65535},
           std::int32_t{INT32_MIN}, std::uint32_t{4294967295u}, std::int64_t{INT64_MIN},
           std::uint64_t{(1ull << 63) - 1}, 1.5f, 1e300, true, p, ints.data<long long>(),
           reals.data<double>());
    auto i = download<long long>(ints);
    auto r = download<double>(reals);
    EXPECT_EQ(i[0], -1);
    EXPECT_EQ(i[1], 255);
    EXPECT_EQ(i[2], -32768);
    EXPECT_EQ(i[3], 65535);
    EXPECT_EQ(i[4], INT32_MIN);
    EXPECT_EQ(i[5], 4294967295ll);
    EXPECT_EQ(i[6], INT64_MIN);
    EXPECT_EQ(i[7], (1ll << 62) + ((1ll << 62) - 1));
    EXPECT_EQ(i[8], 1);
    EXPECT_EQ(i[9], -7);
    EXPECT_EQ(i[10], -3);
    EXPECT_EQ(r[0], 1.5);
    EXPECT_EQ(r[1], 1e300);
    EXPECT_EQ(r[2], 0.125);
    EXPECT_EQ(r[3], 1.5);
    EXPECT_EQ(r[4], -2.5);
    EXPECT_EQ(r[5], 3.25);
}

TEST(RawKernel, RefusesTheWrongNumberOrSizeOfArguments) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    float* p = nullptr;
    try {
        saxpy({1}, {32}, 1.0f, p, p, p);
        FAIL() << "launched with 4 of 5 arguments";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("takes 5 argument(s), 4 were given"),
                  std::string::npos)
            << e.what();
    }
    try {
        saxpy({1}, {32}, 1.0, p, p, p, 5); // a double where a float is taken
        FAIL() << "launched a double into a float parameter";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("argument 0 is 8 bytes"), std::string::npos)
            << e.what();
    }
}

TEST(RawKernel, RefusesBadGeometry) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    float* p = nullptr;
    EXPECT_THROW(saxpy({1}, {1025}, 1.0f, p, p, p, 0), kiln::ArgumentError);
    EXPECT_THROW(saxpy({1}, {32, 32, 2}, 1.0f, p, p, p, 0), kiln::ArgumentError);
    EXPECT_THROW(saxpy({1}, {1, 1, 65}, 1.0f, p, p, p, 0), kiln::ArgumentError);
    EXPECT_THROW(saxpy({0}, {32}, 1.0f, p, p, p, 0), kiln::ArgumentError);
    EXPECT_THROW(saxpy({1}, {0}, 1.0f, p, p, p, 0), kiln::ArgumentError);
    EXPECT_THROW(saxpy({1, 70000}, {32}, 1.0f, p, p, p, 0), kiln::ArgumentError);
}

// The kernel's own thread limit is asked of the driver only when a launch needs it: a block
// over it is refused by the driver first, then explained as the checks before a launch are, and
// the context is left fine for the next launch.
TEST(RawKernel, ABlockOverTheKernelsOwnLimitIsAnArgumentErrorThatNamesIt) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel bounded(R"(
extern "C" __global__ void __launch_bounds__(128) bounded(float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 2.0f * i;
}
)",
                            "bounded");
    const int n = 1000;
    auto out = poisoned(n * sizeof(float));
    for (int attempt = 0; attempt < 2; ++attempt) { // the driver's refusal, then Kiln's check
        try {
            bounded({4}, {256}, out.data<float>(), n);
            FAIL() << "launched 256 threads into __launch_bounds__(128)";
        } catch (const kiln::ArgumentError& e) {
            EXPECT_NE(std::string(e.what()).find("256 threads; this kernel allows at most 128"),
                      std::string::npos)
                << e.what();
        }
    }
    EXPECT_EQ(bounded.function().max_threads_per_block(), 128);
    bounded({(n + 127) / 128}, {128}, out.data<float>(), n);
    auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], 2.0f * i) << i;
}

TEST(RawKernel, AnUnknownNameListsTheKernelsThereAre) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel wrong(kSaxpy, "saxpi");
    float* p = nullptr;
    try {
        wrong({1}, {1}, 1.0f, p, p, p, 0);
        FAIL() << "found a kernel that does not exist";
    } catch (const kiln::ArgumentError& e) {
        EXPECT_NE(std::string(e.what()).find("saxpy"), std::string::npos) << e.what();
    }
}

TEST(RawKernel, UsesMoreThan48KiBOfDynamicSharedMemory) {
    KILN_REQUIRE_GPU();
    const char* source = R"(
extern "C" __global__ void reverse(const float* in, float* out, int per_thread) {
    extern __shared__ float tile[];
    const int n = blockDim.x * per_thread;
    for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = in[blockIdx.x * n + i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[blockIdx.x * n + i] = tile[n - 1 - i];
}
)";
    kiln::RawKernel reverse(source, "reverse");
    const int threads = 256, per_thread = 100, blocks = 8; // 100 KiB of tile per block
    const int n = threads * per_thread;
    auto in = random_floats(std::size_t(n) * blocks);
    auto din = upload(in);
    auto out = poisoned(in.size() * sizeof(float));
    kiln::LaunchConfig config{kiln::Dim3(blocks), kiln::Dim3(threads), n * sizeof(float)};
    reverse(config, din, out, per_thread);
    auto result = download<float>(out);
    for (int b = 0; b < blocks; ++b)
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(result[b * n + i], in[b * n + n - 1 - i]);

    config.shared_memory = 100u << 20; // far beyond any device
    EXPECT_THROW(reverse(config, din, out, per_thread), kiln::ArgumentError);
}

TEST(RawKernel, RunsOnOwnedStreamsAndOnStreamsTheApplicationMade) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    const int n = 1 << 20;
    kiln::Stream owned;
    CUstream foreign = nullptr; // as an application (or cudaStreamCreate) would make it
    KILN_CU(cuStreamCreate(&foreign, CU_STREAM_NON_BLOCKING));
    for (kiln::StreamRef stream : {owned.ref(), kiln::StreamRef(foreign)}) {
        auto x = random_floats(n), y = random_floats(n);
        auto dx = upload(x, stream), dy = upload(y, stream);
        auto out = poisoned(n * sizeof(float), stream);
        saxpy(kiln::LaunchConfig{kiln::Dim3(n / 256), kiln::Dim3(256), 0, stream}, 3.0f, dx, dy,
              out, n);
        std::vector<float> result(n);
        out.copy_to_host(result.data(), out.size(), stream);
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(result[i], std::fma(3.0f, x[i], y[i]));
    }
    KILN_CU(cuStreamDestroy(foreign));
}

TEST(RawKernel, EventsOrderWorkAcrossStreams) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    const int n = 1 << 22;
    kiln::Stream producer, consumer;
    auto x = random_floats(n), y = random_floats(n);
    auto dx = upload(x, producer), dy = upload(y, producer);
    auto mid = poisoned(n * sizeof(float), producer);
    auto out = poisoned(n * sizeof(float), producer);
    producer.synchronize();
    saxpy(kiln::LaunchConfig{kiln::Dim3(n / 256), kiln::Dim3(256), 0, producer}, 2.0f, dx, dy, mid,
          n);
    kiln::Event done;
    done.record(producer);
    done.ref().wait_on(consumer);
    saxpy(kiln::LaunchConfig{kiln::Dim3(n / 256), kiln::Dim3(256), 0, consumer}, 1.0f, mid, dy, out,
          n);
    std::vector<float> result(n);
    out.copy_to_host(result.data(), out.size(), consumer);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], (2.0f * x[i] + y[i]) + y[i]);
}

TEST(RawKernel, CooperativeLaunchSynchronizesTheGrid) {
    KILN_REQUIRE_GPU();
    const char* source = R"(
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
// Each block writes its slot, the grid synchronizes, then every block reads all slots: only a
// grid-wide barrier makes every sum complete.
extern "C" __global__ void grid_sum(int* slots, int* sums) {
    cg::grid_group grid = cg::this_grid();
    if (threadIdx.x == 0) slots[blockIdx.x] = blockIdx.x + 1;
    grid.sync();
    if (threadIdx.x == 0) {
        int total = 0;
        for (int b = 0; b < gridDim.x; ++b) total += slots[b];
        sums[blockIdx.x] = total;
    }
}
)";
    kiln::RawKernel grid_sum(source, "grid_sum");
    const int blocks = kiln::Device::current().multiprocessor_count();
    auto slots = poisoned(blocks * sizeof(int));
    auto sums = poisoned(blocks * sizeof(int));
    kiln::LaunchConfig config{kiln::Dim3(blocks), kiln::Dim3(128)};
    config.cooperative = true;
    grid_sum(config, slots, sums);
    for (int s : download<int>(sums))
        ASSERT_EQ(s, blocks * (blocks + 1) / 2);

    config.grid = kiln::Dim3(blocks * 1000); // cannot all be resident at once
    EXPECT_THROW(grid_sum(config, slots, sums), kiln::ArgumentError);
}

TEST(RawModule, LooksUpTemplatesByNameExpression) {
    KILN_REQUIRE_GPU();
    const char* source = R"(
template <class T, int K> __global__ void scale(T* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= K;
}
)";
    kiln::RawModule module(source, {}, {"scale<float, 3>", "scale<int, 5>"});
    const int n = 1000;
    auto x = random_floats(n);
    auto dx = upload(x);
    module.get_function("scale<float, 3>")({4}, {256}, dx, n);
    std::vector<int> xi(n);
    for (int i = 0; i < n; ++i)
        xi[i] = static_cast<int>(rng()() % 1000) - 500;
    kiln::DeviceBuffer di(n * sizeof(int));
    di.copy_from_host(xi.data(), di.size());
    module.get_function("scale<int, 5>")({4}, {256}, di, n);
    auto rf = download<float>(dx);
    auto ri = download<int>(di);
    for (int i = 0; i < n; ++i) {
        ASSERT_EQ(rf[i], x[i] * 3);
        ASSERT_EQ(ri[i], xi[i] * 5);
    }
}

TEST(RawModule, ModulesOfOneProgramShareOneLoadedModuleWhileOneHoldsIt) {
    KILN_REQUIRE_GPU();
    const std::string source = std::string(kSaxpy) + "// shared by RawModules\n";
    std::weak_ptr<const kiln::Module> watch;
    {
        const kiln::RawModule first(source), second(source);
        const std::shared_ptr<const kiln::Module> loaded = first.module();
        EXPECT_EQ(second.module(), loaded) << "one CUmodule per program and context";
        EXPECT_EQ(first.module(), loaded);
        watch = loaded;
    }
    EXPECT_TRUE(watch.expired()) << "unloaded once no RawModule holds it";
    const kiln::RawModule third(source);
    const std::shared_ptr<const kiln::Module> reloaded = third.module();
    ASSERT_TRUE(reloaded);
    const int n = 1000;
    auto x = random_floats(n), y = random_floats(n);
    auto dx = upload(x), dy = upload(y);
    auto out = poisoned(n * sizeof(float));
    third.get_function("saxpy")({4}, {256}, 2.0f, dx, dy, out, n);
    auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], std::fma(2.0f, x[i], y[i])) << i;
}

TEST(RawModule, LoadsCubinAndPtxFiles) {
    KILN_REQUIRE_GPU();
    kiln::test::TempDir dir;
    kiln::CompileOptions options;
    options.arch = kiln::Device::current().arch();
    auto program = kiln::compile(kSaxpy, options);
    kiln::test::write_file(dir / "saxpy.cubin", program->cubin());
    kiln::test::write_file(dir / "saxpy.ptx", R"(
.version 8.0
.target sm_75
.address_size 64
.visible .entry fill7(.param .u64 out) {
    .reg .b64 %rd<3>;
    .reg .b32 %r<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, 7;
    st.global.u32 [%rd2], %r1;
    ret;
}
)");
    const int n = 512;
    auto x = random_floats(n), y = random_floats(n);
    auto dx = upload(x), dy = upload(y);
    auto out = poisoned(n * sizeof(float));
    kiln::RawModule::from_file((dir / "saxpy.cubin").string())
        .get_function("saxpy")({2}, {256}, 0.5f, dx, dy, out, n);
    auto result = download<float>(out);
    for (int i = 0; i < n; ++i)
        ASSERT_EQ(result[i], 0.5f * x[i] + y[i]);

    auto seven = poisoned(sizeof(int));
    kiln::RawModule::from_file((dir / "saxpy.ptx").string()).get_function("fill7")({1}, {1}, seven);
    EXPECT_EQ(download<int>(seven)[0], 7);
}

TEST(RawKernel, ThreadsLaunchingTheSameKernelShareOneCompile) {
    KILN_REQUIRE_GPU();
    kiln::RawKernel saxpy(kSaxpy, "saxpy");
    const int n = 1 << 16;
    std::vector<std::thread> threads;
    threads.reserve(8);
    std::vector<int> failures(8, 0);
    for (int t = 0; t < 8; ++t)
        threads.emplace_back([&, t] {
            kiln::Device(0).make_current();
            kiln::Stream stream;
            std::mt19937 local(t);
            std::vector<float> x(n), y(n);
            for (int i = 0; i < n; ++i)
                x[i] = float(local() % 100), y[i] = float(local() % 100);
            auto dx = upload(x, stream), dy = upload(y, stream);
            auto out = poisoned(n * sizeof(float), stream);
            for (int rep = 0; rep < 20; ++rep)
                saxpy(kiln::LaunchConfig{kiln::Dim3(n / 256), kiln::Dim3(256), 0, stream}, 2.0f, dx,
                      dy, out, n);
            std::vector<float> result(n);
            out.copy_to_host(result.data(), out.size(), stream);
            for (int i = 0; i < n; ++i)
                failures[t] += result[i] != 2.0f * x[i] + y[i];
        });
    for (auto& thread : threads)
        thread.join();
    for (int t = 0; t < 8; ++t)
        EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST(RawKernel, ACachedCubinTheDriverRejectsIsRecompiledNotALaunchError) {
    KILN_REQUIRE_GPU();
    // A well-formed cache entry (checksums right) whose payload the driver cannot load, planted
    // under the key this kernel will look up: it must count as damaged and be recompiled.
    const std::string source = "extern \"C\" __global__ void planted(int* p) { *p = 4242; }\n";
    const auto options = kiln::CompileOptions::for_arch(kiln::Device::current().arch());
    auto& store = kiln::cache::Store::global();
    kiln::cache::Entry entry;
    // The key a RawKernel of this source looks up: NVRTC's -minimal front end fits it.
    kiln::CompileOptions looked_up = options;
    looked_up.options.emplace_back("-minimal");
    entry.key = kiln::Compiler::global().key_for(source, looked_up);
    entry.payload = std::string("\x7f"
                                "ELF") +
                    std::string(200, '\x5a');
    entry.arch = options.arch;
    entry.nvrtc_version = kiln::nvrtc_version();
    ASSERT_TRUE(store.store(entry));
    const auto damaged_before = store.local().stats().damaged;

    kiln::RawKernel kernel(source, "planted");
    auto out = poisoned(sizeof(int));
    kernel({1}, {1}, out);
    EXPECT_EQ(download<int>(out)[0], 4242);
    EXPECT_EQ(store.local().stats().damaged, damaged_before + 1);
    EXPECT_NE(store.load(entry.key)->payload, entry.payload) << "the entry was rewritten";
    EXPECT_EQ(kernel.compile()->key(), entry.key) << "the planted key is the one looked up";
}
