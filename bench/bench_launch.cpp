// Host time per hot call: raw cuLaunchKernel against Kiln's Function and RawKernel, and every
// front end of issue 16's table (ElementwiseKernel and kiln::add with the output given and
// allocated, a ReductionKernel over an axis, kiln::sum). Each iteration times a batch of calls on
// the host clock and reports the time per call; the stream is drained outside the timed region so
// the queue never fills. The front-end rows also time a batch of raw cuLaunchKernel calls of an
// empty kernel in the same iteration, on the same stream, and report `raw_us` and `x_raw` (their
// time over the raw launch's), so the ratio never mixes two runs or two processes.
//
// Issue 39's rows, `BM_OnStream/<call>/<output>/<stream>`: ElementwiseKernel, a ReductionKernel
// over an axis, kiln::sum over an axis and a kiln::fuse function, each with its output given and
// allocated, on the legacy stream, a kiln::Stream and a stream the program made (cuStreamCreate,
// passed as a StreamRef). Their raw side launches the same kernel as the call with the output
// given, with the same parameters, taken from a graph captured around that call (`raw=same`);
// where that cannot be done (no cuGraphKernelNodeGetParams: the fake driver) it launches the
// empty kernel (`raw=empty`).
//
// Without a GPU, KILN_DRIVER_LIBRARY=<build>/tests/libkiln_fake_driver.so runs the same rows over
// a driver that does nothing: `over_raw_us` is then Kiln's own host work per call.

#include "bench_support.hpp"

#include "driver/driver.hpp"
#include "kiln/kiln.hpp"

#include <benchmark/benchmark.h>

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int kBatch = 64;

constexpr const char* kEmpty = R"(
extern "C" __global__ void empty(float* p, int n) { if (n < 0) p[0] = 0; }
)";

struct Fixture {
    kiln::Stream stream;
    kiln::DeviceBuffer buffer{1024, stream};
    kiln::RawKernel kernel{kEmpty, "empty"};
    kiln::Function function;
    // The front ends' operands: 1024 float32 elements, and a 32 x 1024 matrix reduced over rows.
    kiln::Array x = kiln::zeros({1024}, kiln::DType::float32, stream);
    kiln::Array y = kiln::zeros({1024}, kiln::DType::float32, stream);
    kiln::Array z = kiln::empty({1024}, kiln::DType::float32, stream);
    kiln::Array matrix = kiln::zeros({32, 1024}, kiln::DType::float32, stream);
    kiln::Array rows = kiln::empty({32}, kiln::DType::float32, stream);
    kiln::ElementwiseKernel fma3{"T x, T y, T b", "T z", "z = x * y + b", "fma3"};
    kiln::ReductionKernel l2norm{"T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm"};
    // A stream the program made itself (never destroyed: the fixture lives as long as the process),
    // and one for capturing the calls whose kernels the raw side launches.
    CUstream program = nullptr;
    kiln::Stream capture;
    Fixture() {
        kernel({1}, {32}, buffer.data<float>(), 1); // compile, load, warm up
        function = kernel.function();
        stream.synchronize();
        KILN_CU(cuStreamCreate(&program, CU_STREAM_NON_BLOCKING));
    }
};

Fixture* fixture(benchmark::State& state) {
    return kiln::bench::shared_fixture<Fixture>(state);
}

template <class Launch> void run(benchmark::State& state, Fixture& f, Launch&& launch) {
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            launch();
        const auto stop = std::chrono::steady_clock::now();
        f.stream.synchronize();
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count() / kBatch);
    }
}

void BM_Launch_RawDriver(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const auto& driver = kiln::detail::driver();
    CUfunction function = f->function.handle();
    float* p = f->buffer.data<float>();
    int n = 1;
    void* args[] = {&p, &n};
    CUstream stream = f->stream.get();
    run(state, *f, [&] {
        if (driver.cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, args, nullptr) !=
            CUDA_SUCCESS)
            state.SkipWithError("cuLaunchKernel failed");
    });
}

void BM_Launch_Function(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    run(state, *f, [&] { f->function.launch(config, p, 1); });
}

void BM_Launch_RawKernel(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    run(state, *f, [&] { f->kernel(config, p, 1); });
}

// A raw launch: a kernel, its grid, block and shared memory, and its parameters' bytes.
struct RawLaunch {
    CUfunction function = nullptr;
    unsigned grid[3] = {1, 1, 1}, block[3] = {32, 1, 1}, shared = 0;
    std::vector<std::vector<unsigned char>> params;
    std::vector<void*> pointers; // into params: made where the launch stays (against())
    bool same_kernel = false;    // the call's own kernel, not the empty one
    CUresult launch(CUstream stream) {
        return kiln::detail::driver().cuLaunchKernel(function, grid[0], grid[1], grid[2], block[0],
                                                     block[1], block[2], shared, stream,
                                                     pointers.data(), nullptr);
    }
};

// The empty kernel, with its two parameters.
RawLaunch empty_launch(Fixture& f) {
    RawLaunch raw;
    raw.function = f.function.handle();
    float* p = f.buffer.data<float>();
    int n = 1;
    raw.params = {std::vector<unsigned char>(sizeof p), std::vector<unsigned char>(sizeof n)};
    std::memcpy(raw.params[0].data(), &p, sizeof p);
    std::memcpy(raw.params[1].data(), &n, sizeof n);
    return raw;
}

// A driver entry point Kiln's table does not hold, from the libcuda.so.1 Kiln loaded (none from
// the fake driver, which has no graphs).
template <class Function> Function graph_entry(const char* name) {
    using GetProcAddress =
        CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    auto get =
        library ? reinterpret_cast<GetProcAddress>(dlsym(library, "cuGetProcAddress_v2")) : nullptr;
    void* function = nullptr;
    if (!get || get(name, &function, 12090, CU_GET_PROC_ADDRESS_DEFAULT, nullptr) != CUDA_SUCCESS)
        return nullptr;
    return reinterpret_cast<Function>(function);
}

// The kernel @p call launches, with its parameters, from a graph captured around it on the
// fixture's capture stream; the empty kernel when the graph has no single kernel node to read.
RawLaunch launch_of(Fixture& f, const std::function<void(CUstream)>& call) {
    using GetNodes = decltype(&::cuGraphGetNodes);
    using NodeType = decltype(&::cuGraphNodeGetType);
    using KernelParams = decltype(&::cuGraphKernelNodeGetParams);
    static const auto get_nodes = graph_entry<GetNodes>("cuGraphGetNodes");
    static const auto node_type = graph_entry<NodeType>("cuGraphNodeGetType");
    static const auto kernel_params = graph_entry<KernelParams>("cuGraphKernelNodeGetParams");
    if (!get_nodes || !node_type || !kernel_params) return empty_launch(f);
    try {
        const kiln::Graph graph = kiln::Graph::capture(
            f.capture, [&] { call(f.capture.get()); }, CU_STREAM_CAPTURE_MODE_RELAXED);
        std::size_t count = 0;
        if (get_nodes(graph.get(), nullptr, &count) != CUDA_SUCCESS) return empty_launch(f);
        std::vector<CUgraphNode> nodes(count);
        if (get_nodes(graph.get(), nodes.data(), &count) != CUDA_SUCCESS) return empty_launch(f);
        RawLaunch raw;
        int kernels = 0;
        for (CUgraphNode node : nodes) {
            CUgraphNodeType type{};
            CUDA_KERNEL_NODE_PARAMS p{};
            if (node_type(node, &type) != CUDA_SUCCESS || type != CU_GRAPH_NODE_TYPE_KERNEL ||
                kernel_params(node, &p) != CUDA_SUCCESS || !p.func || !p.kernelParams)
                continue;
            ++kernels;
            raw = RawLaunch{};
            raw.function = p.func;
            raw.grid[0] = p.gridDimX, raw.grid[1] = p.gridDimY, raw.grid[2] = p.gridDimZ;
            raw.block[0] = p.blockDimX, raw.block[1] = p.blockDimY, raw.block[2] = p.blockDimZ;
            raw.shared = p.sharedMemBytes;
            std::size_t offset = 0, size = 0;
            for (std::size_t k = 0; kiln::detail::driver().cuFuncGetParamInfo(
                                        p.func, k, &offset, &size) == CUDA_SUCCESS;
                 ++k) {
                const auto* bytes = static_cast<const unsigned char*>(p.kernelParams[k]);
                raw.params.emplace_back(bytes, bytes + size);
            }
        }
        if (kernels != 1) return empty_launch(f);
        raw.same_kernel = true;
        return raw;
    } catch (const kiln::Error&) {
        return empty_launch(f);
    }
}

// One row of a table: batches of @p call and of @p raw, one after the other in each iteration, on
// @p stream. The iteration time is @p call's; `raw_us` is the raw launch's, `x_raw` the ratio of
// the two totals, `over_raw_us` the difference per call.
template <class Call>
void against(benchmark::State& state, RawLaunch raw, kiln::StreamRef stream, Call&& call) {
    for (auto& param : raw.params)
        raw.pointers.push_back(param.data());
    for (int i = 0; i < 100; ++i) { // compile, load, fill the caches and the memory pool
        call();
        raw.launch(stream.get());
    }
    stream.synchronize();
    double raw_total = 0, call_total = 0;
    for (auto _ : state) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            if (raw.launch(stream.get()) != CUDA_SUCCESS)
                state.SkipWithError("cuLaunchKernel failed");
        auto stop = std::chrono::steady_clock::now();
        stream.synchronize();
        const double raw_time = std::chrono::duration<double>(stop - start).count();
        start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            call();
        stop = std::chrono::steady_clock::now();
        stream.synchronize();
        const double called = std::chrono::duration<double>(stop - start).count();
        raw_total += raw_time;
        call_total += called;
        state.SetIterationTime(called / kBatch);
    }
    const double calls = static_cast<double>(state.iterations()) * kBatch;
    if (calls == 0 || raw_total == 0) return;
    state.counters["raw_us"] = raw_total / calls * 1e6;
    state.counters["x_raw"] = call_total / raw_total;
    state.counters["over_raw_us"] = (call_total - raw_total) / calls * 1e6;
    state.SetLabel(raw.same_kernel ? "raw=same" : "raw=empty");
}

// Issue 16's rows: against the empty kernel, on the fixture's kiln::Stream.
template <class Call> void against_raw(benchmark::State& state, Fixture& f, Call&& call) {
    against(state, empty_launch(f), f.stream, std::forward<Call>(call));
}

void BM_Hot_ElementwiseOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::CallOptions options{f->stream, {}, {}};
    against_raw(state, *f, [&] { f->fma3(options, f->x, f->y, 1.0f, f->z); });
}

void BM_Hot_ElementwiseOutputAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::CallOptions options{f->stream, {}, {}};
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(f->fma3(options, f->x, f->y, 1.0f)); });
}

void BM_Hot_ReductionAxisOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::ReduceCall how{1, false, f->stream};
    against_raw(state, *f, [&] { f->l2norm(how, f->matrix, f->rows); });
}

void BM_Hot_ReductionAxisOutputAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::ReduceCall how{1, false, f->stream};
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(f->l2norm(how, f->matrix)); });
}

void BM_Hot_AddOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::OpOptions options;
    options.stream = f->stream;
    options.out = &f->z;
    against_raw(state, *f, [&] { kiln::add(f->x, f->y, options); });
}

void BM_Hot_AddOutputAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::OpOptions options;
    options.stream = f->stream;
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(kiln::add(f->x, f->y, options)); });
}

void BM_Hot_SumAxisOutputGiven(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::ReduceOptions options;
    options.stream = f->stream;
    options.out = &f->rows;
    against_raw(state, *f, [&] { kiln::sum(f->matrix, 1, options); });
}

void BM_Hot_SumAxisAllocated(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    kiln::ReduceOptions options;
    options.stream = f->stream;
    against_raw(state, *f, [&] { benchmark::DoNotOptimize(kiln::sum(f->matrix, 1, options)); });
}

void BM_Hot_RawKernel(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    against_raw(state, *f, [&] { f->kernel(config, p, 1); });
}

// Activity timing on (issue 6): each launch also records two events and a record. A session per
// batch keeps the record list short; opening and closing it is outside the timed region.
void BM_Launch_RawKernel_ActivityTiming(benchmark::State& state) {
    Fixture* f = fixture(state);
    if (!f) return;
    const kiln::LaunchConfig config{kiln::Dim3(1), kiln::Dim3(32), 0, f->stream};
    float* p = f->buffer.data<float>();
    for (auto _ : state) {
        kiln::TimingSession session(kiln::Activity::kernel, false);
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < kBatch; ++i)
            f->kernel(config, p, 1);
        const auto stop = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(session.end(false));
        state.SetIterationTime(std::chrono::duration<double>(stop - start).count() / kBatch);
    }
}

// Issue 39's rows: each call on each kind of stream, its output given or allocated.
enum class On { legacy, kiln_stream, program };
const char* const kOnNames[] = {"legacy", "kiln_stream", "program"};

CUstream stream_of(Fixture& f, On on) {
    return on == On::legacy ? nullptr : on == On::kiln_stream ? f.stream.get() : f.program;
}

const auto& fused_fma() {
    static const auto fused =
        kiln::fuse("launch_fused_fma", [](auto x, auto y, auto b) { return x * y + b; });
    return fused;
}
const auto& fused_fma_into() {
    static const auto fused =
        kiln::fuse("launch_fused_fma_into",
                   [](auto x, auto y, auto b, auto z) { kiln::copyto(z, x * y + b); });
    return fused;
}

// A call on @p stream, its output given (@p given) or allocated (and dropped).
using StreamCall = void (*)(Fixture& f, CUstream stream, bool given);

void elementwise_call(Fixture& f, CUstream stream, bool given) {
    const kiln::CallOptions options{stream, {}, {}};
    if (given)
        f.fma3(options, f.x, f.y, 1.0f, f.z);
    else
        benchmark::DoNotOptimize(f.fma3(options, f.x, f.y, 1.0f));
}
void reduction_call(Fixture& f, CUstream stream, bool given) {
    const kiln::ReduceCall how{1, false, stream};
    if (given)
        f.l2norm(how, f.matrix, f.rows);
    else
        benchmark::DoNotOptimize(f.l2norm(how, f.matrix));
}
void sum_call(Fixture& f, CUstream stream, bool given) {
    kiln::ReduceOptions options;
    options.stream = stream;
    options.out = given ? &f.rows : nullptr;
    benchmark::DoNotOptimize(kiln::sum(f.matrix, 1, options));
}
void fuse_call(Fixture& f, CUstream stream, bool given) {
    const kiln::CallOptions options{stream, {}, {}};
    if (given)
        fused_fma_into()(options, f.x, f.y, 1.0f, f.z);
    else
        benchmark::DoNotOptimize(fused_fma()(options, f.x, f.y, 1.0f));
}

struct StreamRow {
    const char* name;
    StreamCall call;
};
const StreamRow kStreamRows[] = {{"elementwise", &elementwise_call},
                                 {"reduction_axis", &reduction_call},
                                 {"sum_axis", &sum_call},
                                 {"fuse", &fuse_call}};

// Raw launches of the kernel the call with its output given launches (the same kernel as the
// allocated call's, with another output address), each row against them in the same iterations.
void on_stream(benchmark::State& state, StreamCall call, bool given, On on) {
    Fixture* f = fixture(state);
    if (!f) return;
    const CUstream stream = stream_of(*f, on);
    call(*f, stream, true); // compiled, loaded and tuned before the capture
    kiln::StreamRef(stream).synchronize();
    against(state, launch_of(*f, [&](CUstream s) { call(*f, s, true); }), stream,
            [&] { call(*f, stream, given); });
}

// Interleaved in registration order, so drift affects each alike.
BENCHMARK(BM_Launch_RawDriver)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_Function)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_RawKernel)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Launch_RawKernel_ActivityTiming)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
// Issue 16's table, each row against a raw launch timed in the same iterations.
BENCHMARK(BM_Hot_RawKernel)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ElementwiseOutputGiven)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ElementwiseOutputAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ReductionAxisOutputGiven)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_ReductionAxisOutputAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_AddOutputGiven)->UseManualTime()->Iterations(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_AddOutputAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_SumAxisOutputGiven)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Hot_SumAxisAllocated)
    ->UseManualTime()
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);

// Issue 39's rows, after issue 16's.
const bool kStreamRowsRegistered = [] {
    for (const StreamRow& row : kStreamRows)
        for (const bool given : {true, false})
            for (const On on : {On::legacy, On::kiln_stream, On::program})
                benchmark::RegisterBenchmark((std::string("BM_OnStream/") + row.name +
                                              (given ? "/given/" : "/allocated/") +
                                              kOnNames[static_cast<int>(on)])
                                                 .c_str(),
                                             [call = row.call, given, on](benchmark::State& state) {
                                                 on_stream(state, call, given, on);
                                             })
                    ->UseManualTime()
                    ->Iterations(1000)
                    ->Unit(benchmark::kMicrosecond);
    return true;
}();

} // namespace

BENCHMARK_MAIN();
