// Kiln inside another program: kernels launched on a stream the application created through the
// driver, arrays over memory the application allocated (and frees afterwards), an application
// allocator serving every allocation Kiln makes, and DLPack tensors passed through kernels both
// ways. Results are checked against the host on fresh random data, outputs poisoned first.

#include "gpu.hpp"
#include "process_cache_dir.hpp"

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <utility>
#include <vector>

namespace {

using kiln::Array;
using kiln::DType;

const auto* const kCacheDir = ::testing::AddGlobalTestEnvironment(new kiln::test::ProcessCacheDir);

constexpr unsigned kPoison = 0xffffffffu; // a NaN as float32

std::vector<float> random_floats(std::size_t n) {
    static std::mt19937 engine(std::random_device{}());
    std::uniform_real_distribution<float> dist(-10.f, 10.f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = dist(engine);
    return v;
}

// What an application (or its framework) does by itself, through the driver: the device's primary
// context made current, a stream of its own. Kiln is told nothing but the stream.
class AppStream {
  public:
    AppStream() {
        KILN_CU(cuDeviceGet(&m_device, 0));
        KILN_CU(cuDevicePrimaryCtxRetain(&m_context, m_device));
        KILN_CU(cuCtxSetCurrent(m_context));
        KILN_CU(cuStreamCreate(&m_stream, CU_STREAM_NON_BLOCKING));
    }
    ~AppStream() {
        const auto& d = kiln::detail::driver();
        d.cuStreamSynchronize(m_stream);
        d.cuStreamDestroy(m_stream);
        d.cuDevicePrimaryCtxRelease(m_device);
    }
    AppStream(const AppStream&) = delete;
    AppStream& operator=(const AppStream&) = delete;
    CUstream get() const { return m_stream; }

  private:
    CUdevice m_device = 0;
    CUcontext m_context = nullptr;
    CUstream m_stream = nullptr;
};

// Device memory the application allocates with cuMemAlloc and frees itself.
class AppMemory {
  public:
    explicit AppMemory(std::size_t bytes)
        : m_bytes(bytes) {
        kiln::detail::current_context();
        KILN_CU(cuMemAlloc(&m_pointer, bytes));
    }
    ~AppMemory() {
        if (m_pointer) kiln::detail::driver().cuMemFree(m_pointer);
    }
    AppMemory(const AppMemory&) = delete;
    AppMemory& operator=(const AppMemory&) = delete;
    CUdeviceptr get() const { return m_pointer; }

    void upload(const std::vector<float>& host, CUstream stream = nullptr) const {
        KILN_CU(cuMemcpyHtoDAsync(m_pointer, host.data(), host.size() * sizeof(float), stream));
        KILN_CU(cuStreamSynchronize(stream));
    }
    void poison(CUstream stream = nullptr) const {
        KILN_CU(cuMemsetD32Async(m_pointer, kPoison, m_bytes / 4, stream));
    }
    std::vector<float> download(CUstream stream = nullptr) const {
        std::vector<float> host(m_bytes / sizeof(float));
        KILN_CU(cuMemcpyDtoHAsync(host.data(), m_pointer, m_bytes, stream));
        KILN_CU(cuStreamSynchronize(stream));
        return host;
    }
    /// Free now, as the application does once Kiln is done with the memory.
    CUresult free() { return kiln::detail::driver().cuMemFree(std::exchange(m_pointer, 0)); }

  private:
    CUdeviceptr m_pointer = 0;
    std::size_t m_bytes;
};

// Reads the whole of device memory at @p pointer as the application would.
std::vector<float> read_back(CUdeviceptr pointer, std::size_t count, CUstream stream) {
    std::vector<float> host(count);
    KILN_CU(cuMemcpyDtoHAsync(host.data(), pointer, count * sizeof(float), stream));
    KILN_CU(cuStreamSynchronize(stream));
    return host;
}

constexpr const char* kKernels = R"(
// Copies after a busy wait, so work queued after it on another stream would overtake it.
extern "C" __global__ void late_copy(float* to, const float* from, int n, long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) to[i] = from[i];
}
extern "C" __global__ void saxpy(float a, const float* x, const float* y, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
)";

kiln::ElementwiseKernel scaled_difference() {
    return kiln::ElementwiseKernel("T x, T y, T a", "T z", "z = (x - y) * a", "scaled_difference");
}

} // namespace

TEST(Interop, KernelsRunInOrderOnAStreamTheApplicationCreated) {
    KILN_REQUIRE_GPU();
    AppStream app;
    const int n = 1 << 20;
    const auto x = random_floats(n), y = random_floats(n);
    AppMemory staged(n * sizeof(float)), dx(n * sizeof(float)), dy(n * sizeof(float)),
        out(n * sizeof(float));
    staged.upload(x, app.get());
    dy.upload(y, app.get());
    dx.poison(app.get());
    out.poison(app.get());

    kiln::RawModule module(kKernels);
    const kiln::LaunchConfig config{{(n + 255) / 256}, {256}, 0, app.get()};
    // Everything below is queued on the application's stream and must run in that order: if
    // Kiln used another stream, saxpy would read x before the late copy writes it.
    module.get_function("late_copy")(config, dx.get(), staged.get(), n, 20'000'000LL);
    module.get_function("saxpy")(config, 2.5f, dx.get(), dy.get(), out.get(), n);
    const Array sum = Array::wrap(out.get(), {n}, DType::float32);
    const Array ys = Array::wrap(dy.get(), {n}, DType::float32);
    kiln::CallOptions call;
    call.stream = app.get();
    const Array z = scaled_difference()(call, sum, ys, 0.5f);

    const std::vector<float> saxpy_result = out.download(app.get());
    const std::vector<float> z_result = read_back(z.data(), n, app.get());
    for (int i = 0; i < n; ++i) {
        const float s = std::fma(2.5f, x[i], y[i]); // NVRTC contracts a * x + y to an FMA
        ASSERT_EQ(saxpy_result[i], s) << i;
        ASSERT_EQ(z_result[i], (s - y[i]) * 0.5f) << i;
    }
}

TEST(Interop, ArraysWrapMemoryTheApplicationOwnsAndFrees) {
    KILN_REQUIRE_GPU();
    const int rows = 300, cols = 257;
    const std::size_t count = static_cast<std::size_t>(rows) * cols, bytes = count * sizeof(float);
    const auto x = random_floats(count), y = random_floats(count);
    AppMemory mx(bytes), my(bytes), mz(bytes), mt(bytes);
    mx.upload(x);
    my.upload(y);
    mz.poison();
    mt.poison();
    {
        const Array ax = Array::wrap(mx.get(), {rows, cols}, DType::float32);
        const Array ay = Array::wrap(my.get(), {rows, cols}, DType::float32);
        const Array az = Array::wrap(mz.get(), {rows, cols}, DType::float32);
        // y read as a (cols, rows) column-major array, through explicit byte strides.
        const Array ayt = Array::wrap(my.get(), {cols, rows}, DType::float32,
                                      {sizeof(float), cols * sizeof(float)});
        const Array at = Array::wrap(mt.get(), {cols, rows}, DType::float32);
        EXPECT_EQ(ax.owner(), nullptr);
        const auto kernel = scaled_difference();
        kernel(ax, ay, -2.0f, az);                 // outputs given: written in place
        kernel(ax.transpose(), ayt, 3.0f, at);     // a transposed view of wrapped memory
        const Array copy = kernel(ax, 0.0f, 1.0f); // an output Kiln allocates
        const std::vector<float> c = copy.to_host<float>();
        for (std::size_t i = 0; i < count; ++i)
            ASSERT_EQ(c[i], x[i]) << i;
    } // every Kiln view is gone: the memory is still the application's
    const std::vector<float> z = mz.download(), t = mt.download();
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const std::size_t i = static_cast<std::size_t>(r) * cols + c;
            ASSERT_EQ(z[i], (x[i] - y[i]) * -2.0f) << r << ", " << c;
            ASSERT_EQ(t[static_cast<std::size_t>(c) * rows + r], (x[i] - y[i]) * 3.0f)
                << r << ", " << c;
        }
    EXPECT_EQ(mx.free(), CUDA_SUCCESS) << "Kiln must not have freed wrapped memory";
    EXPECT_EQ(mz.free(), CUDA_SUCCESS);
    EXPECT_EQ(mt.free(), CUDA_SUCCESS);
}

TEST(Interop, AWrappedArrayKeepsItsOwnerAliveUntilTheLastView) {
    KILN_REQUIRE_GPU();
    const int n = 4096;
    const auto x = random_floats(n);
    kiln::detail::current_context();
    CUdeviceptr pointer = 0;
    KILN_CU(cuMemAlloc(&pointer, n * sizeof(float)));
    KILN_CU(cuMemcpyHtoDAsync(pointer, x.data(), n * sizeof(float), nullptr));
    int freed = 0;
    // NOLINTNEXTLINE(performance-no-int-to-ptr): the device address, as the owner's handle
    std::shared_ptr<void> owner(reinterpret_cast<void*>(pointer), [&freed](void* p) {
        EXPECT_EQ(kiln::detail::driver().cuMemFree(reinterpret_cast<CUdeviceptr>(p)), CUDA_SUCCESS);
        ++freed;
    });
    Array a = Array::wrap(pointer, {n}, DType::float32, {}, std::move(owner));
    Array odd = a.slice({kiln::Slice::range(1, n, 2)});
    a = Array();
    EXPECT_EQ(freed, 0);
    const Array doubled = scaled_difference()(odd, 0.0f, 2.0f);
    // The application's deleter frees at once, so the work reading the memory must be done.
    kiln::StreamRef().synchronize();
    odd = Array();
    EXPECT_EQ(freed, 1) << "the last view released the application's memory";
    const std::vector<float> d = doubled.to_host<float>();
    for (int i = 0; i < n / 2; ++i)
        ASSERT_EQ(d[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(2 * i + 1)] * 2.0f);
}

namespace {

// An application allocator, as one forwarding to a framework's caching allocator would be:
// stream-ordered driver calls, with every call counted and checked.
class CountingAllocator final : public kiln::Allocator {
  public:
    CUdeviceptr allocate(std::size_t bytes, kiln::StreamRef stream) override {
        CUdeviceptr pointer = 0;
        KILN_CU(cuMemAllocAsync(&pointer, bytes, stream.get()));
        std::lock_guard<std::mutex> lock(m_mutex);
        m_live[pointer] = bytes;
        ++m_allocations;
        m_bytes += bytes;
        return pointer;
    }
    void deallocate(CUdeviceptr pointer, std::size_t bytes,
                    kiln::StreamRef stream) noexcept override {
        kiln::detail::driver().cuMemFreeAsync(pointer, stream.get());
        std::lock_guard<std::mutex> lock(m_mutex);
        const auto found = m_live.find(pointer);
        if (found == m_live.end() || found->second != bytes) ++m_mismatches;
        if (found != m_live.end()) m_live.erase(found);
        ++m_deallocations;
    }

    int allocations() const { return locked(m_allocations); }
    int deallocations() const { return locked(m_deallocations); }
    std::size_t bytes() const { return locked(m_bytes); }
    int mismatches() const { return locked(m_mismatches); }
    std::size_t live() const { return locked(m_live.size()); }

  private:
    template <class T> T locked(const T& value) const {
        std::lock_guard<std::mutex> lock(m_mutex);
        return value;
    }
    mutable std::mutex m_mutex;
    std::map<CUdeviceptr, std::size_t> m_live;
    int m_allocations = 0, m_deallocations = 0, m_mismatches = 0;
    std::size_t m_bytes = 0;
};

// Plugs an allocator in for one scope and puts the previous one back, whatever happens.
class AllocatorScope {
  public:
    explicit AllocatorScope(std::shared_ptr<kiln::Allocator> allocator)
        : m_previous(kiln::default_allocator()) {
        kiln::set_default_allocator(std::move(allocator));
    }
    ~AllocatorScope() { kiln::set_default_allocator(m_previous); }
    AllocatorScope(const AllocatorScope&) = delete;
    AllocatorScope& operator=(const AllocatorScope&) = delete;

  private:
    std::shared_ptr<kiln::Allocator> m_previous;
};

} // namespace

TEST(Interop, AnApplicationAllocatorServesKilnsAllocations) {
    KILN_REQUIRE_GPU();
    const auto previous = kiln::default_allocator();
    const auto counting = std::make_shared<CountingAllocator>();
    const int n = 10007;
    const auto x = random_floats(n), y = random_floats(n);
    {
        AllocatorScope scope(counting);
        EXPECT_EQ(kiln::default_allocator(), counting);
        kiln::Stream stream;
        Array e = kiln::empty({n}, DType::float32, stream);
        EXPECT_EQ(counting->allocations(), 1);
        EXPECT_EQ(counting->bytes(), n * sizeof(float));
        const Array dx = kiln::from_host(x, stream), dy = kiln::from_host(y, stream);
        EXPECT_EQ(counting->allocations(), 3);
        KILN_CU(cuMemsetD32Async(e.data(), kPoison, n, stream.get()));

        kiln::CallOptions call;
        call.stream = stream;
        scaled_difference()(call, dx, dy, 4.0f, e);               // into the poisoned array
        const Array z = scaled_difference()(call, dx, dy, -1.0f); // output from the allocator
        EXPECT_EQ(counting->allocations(), 4) << "the kernel's output came from the allocator";
        EXPECT_EQ(counting->bytes(), std::size_t{4} * n * sizeof(float));
        const std::vector<float> ev = e.to_host<float>(stream), zv = z.to_host<float>(stream);
        for (int i = 0; i < n; ++i) {
            ASSERT_EQ(ev[i], (x[i] - y[i]) * 4.0f) << i;
            ASSERT_EQ(zv[i], (x[i] - y[i]) * -1.0f) << i;
        }
        EXPECT_EQ(counting->deallocations(), 0);
    } // arrays freed (in stream order, through the allocator), then the allocator restored
    EXPECT_EQ(counting->deallocations(), 4);
    EXPECT_EQ(counting->live(), 0u);
    EXPECT_EQ(counting->mismatches(), 0) << "every free names a live pointer with its size";
    EXPECT_EQ(kiln::default_allocator(), previous);
    const Array after = kiln::empty({n}, DType::float32);
    EXPECT_EQ(counting->allocations(), 4) << "the restored allocator serves new arrays";
}

namespace {

// Memory the application hands over as a DLPack tensor; its deleter frees it with cuMemFree.
struct AppTensor {
    CUdeviceptr pointer = 0;
    std::int64_t shape[1];
    DLManagedTensor managed{};
    int* deleted;
    AppTensor(std::int64_t n, int* counter)
        : shape{n}
        , deleted(counter) {
        KILN_CU(cuMemAlloc(&pointer, static_cast<std::size_t>(n) * sizeof(float)));
        // NOLINTNEXTLINE(performance-no-int-to-ptr): DLPack holds device addresses as void*
        managed.dl_tensor.data = reinterpret_cast<void*>(pointer);
        managed.dl_tensor.device = {kDLCUDA, kiln::Device::current().ordinal()};
        managed.dl_tensor.ndim = 1;
        managed.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
        managed.dl_tensor.shape = shape;
        managed.manager_ctx = this;
        managed.deleter = [](DLManagedTensor* self) {
            auto* owner = static_cast<AppTensor*>(self->manager_ctx);
            EXPECT_EQ(kiln::detail::driver().cuMemFree(owner->pointer), CUDA_SUCCESS);
            ++*owner->deleted;
            delete owner;
        };
    }
};

} // namespace

TEST(Interop, DlpackTensorsPassThroughKernelsBothWays) {
    KILN_REQUIRE_GPU();
    AppStream app;
    const int n = 65536 + 3;
    const auto x = random_floats(n), y = random_floats(n);
    int deleted = 0;
    auto* input = new AppTensor(n, &deleted);
    auto* output = new AppTensor(n, &deleted);
    KILN_CU(cuMemcpyHtoDAsync(input->pointer, x.data(), n * sizeof(float), app.get()));
    KILN_CU(cuMemsetD32Async(output->pointer, kPoison, n, app.get()));
    const CUdeviceptr output_pointer = output->pointer;
    {
        const Array ax = kiln::from_dlpack(&input->managed);
        const Array az = kiln::from_dlpack(&output->managed);
        const Array ay = kiln::from_host(y, app.get());
        kiln::CallOptions call;
        call.stream = app.get();
        scaled_difference()(call, ax, ay, 1.5f, az); // into the application's tensor
        // Kiln's own result handed to the application, which reads it and lets it go.
        const Array kiln_result = scaled_difference()(call, ax, ay, -0.25f);
        DLManagedTensor* exported = kiln::to_dlpack(kiln_result);
        EXPECT_EQ(reinterpret_cast<CUdeviceptr>(exported->dl_tensor.data), kiln_result.data());
        ASSERT_EQ(exported->dl_tensor.ndim, 1);
        ASSERT_EQ(exported->dl_tensor.shape[0], n);
        const std::vector<float> r =
            read_back(reinterpret_cast<CUdeviceptr>(exported->dl_tensor.data), n, app.get());
        exported->deleter(exported);
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(r[i], (x[i] - y[i]) * -0.25f) << i;
        // And back: the round trip views the same memory.
        const Array again = kiln::from_dlpack(kiln::to_dlpack(az));
        EXPECT_EQ(again.data(), output_pointer);
        EXPECT_EQ(deleted, 0);
        const std::vector<float> z = again.to_host<float>(app.get());
        for (int i = 0; i < n; ++i)
            ASSERT_EQ(z[i], (x[i] - y[i]) * 1.5f) << i;
    }
    EXPECT_EQ(deleted, 2) << "each application tensor's deleter ran once, after the last view";
}
