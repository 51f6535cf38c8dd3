// The scratch memory of split reductions (kernels/core/reduction_workspace.hpp), over the fake
// driver (tests/support/fake_driver.cpp), which gives a destroyed stream's handle to the next
// stream made, as a real driver may, and records the events, waits and frees it is asked for.

#include "core/reduction_workspace.hpp"
#include "driver/driver.hpp"
#include "fake_driver_ops.hpp"
#include "kiln/kiln.hpp"
#include "memory/release_stream.hpp"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <utility>
#include <vector>

namespace {

namespace kd = kiln::detail;
using kiln::test::FakeOp;

// A stream the program makes itself: Kiln never sees its end.
struct ForeignStream {
    CUstream handle = nullptr;
    ForeignStream() { EXPECT_EQ(kd::driver().cuStreamCreate(&handle, 0), CUDA_SUCCESS); }
    ~ForeignStream() { destroy(); }
    void destroy() {
        if (handle) kd::driver().cuStreamDestroy(std::exchange(handle, nullptr));
    }
};

// Calls of a driver entry point the fake driver counts.
unsigned long long calls(const char* name) {
    using CallsFunction = unsigned long long (*)(const char*);
    static const auto function = [] {
        void* handle = dlopen(std::getenv("KILN_DRIVER_LIBRARY"), RTLD_NOW | RTLD_NOLOAD);
        return handle ? reinterpret_cast<CallsFunction>(dlsym(handle, "kiln_fake_driver_calls"))
                      : nullptr;
    }();
    return function ? function(name) : 0;
}

// The counters' address of a lease of a small workspace on @p stream, let go at once.
CUdeviceptr workspace_of(CUstream stream) {
    return kd::lease_workspace(kd::current_context(), stream, 4096, 16).counters;
}

// The latest operation of @p kind on @p stream, or none.
const FakeOp* latest(const std::vector<FakeOp>& ops, FakeOp::Kind kind, CUstream stream) {
    for (auto op = ops.rbegin(); op != ops.rend(); ++op)
        if (op->kind == kind && op->stream == stream) return &*op;
    return nullptr;
}
// A pointer into a temporary record would dangle: name the record first.
const FakeOp* latest(const std::vector<FakeOp>&& ops, FakeOp::Kind kind, CUstream stream) = delete;

class ReductionWorkspace : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(std::getenv("KILN_DRIVER_LIBRARY")) << "runs over the fake driver";
        kiln::Device::current();
    }
};

TEST_F(ReductionWorkspace, AProgramsStreamKeepsItsWorkspaceAndMarksEachLaunchsEnd) {
    ForeignStream stream;
    const CUdeviceptr first = workspace_of(stream.handle);
    ASSERT_NE(first, 0u);
    const std::vector<FakeOp> recorded = kiln::test::fake_driver_ops();
    const FakeOp* first_end = latest(recorded, FakeOp::record_event, stream.handle);
    ASSERT_NE(first_end, nullptr) << "the first lease's end was not marked";
    const CUevent done = first_end->event;
    const unsigned long long records = calls("cuEventRecord"), allocs = calls("cuMemAllocAsync");
    {
        const kd::WorkspaceLease lease =
            kd::lease_workspace(kd::current_context(), stream.handle, 4096, 16);
        EXPECT_EQ(lease.counters, first);
        // The launch would be queued here: nothing is recorded until the lease ends.
        EXPECT_EQ(calls("cuEventRecord"), records) << "recorded before the launch";
    }
    EXPECT_EQ(calls("cuEventRecord"), records + 1) << "the lease's end was not marked";
    EXPECT_EQ(calls("cuMemAllocAsync"), allocs);
    const std::vector<FakeOp> ops = kiln::test::fake_driver_ops();
    ASSERT_FALSE(ops.empty());
    EXPECT_EQ(ops.back().kind, FakeOp::record_event);
    EXPECT_EQ(ops.back().stream, stream.handle);
    EXPECT_EQ(ops.back().event, done);
}

TEST_F(ReductionWorkspace, ANewStreamAtADestroyedStreamsHandleGetsAnotherWorkspace) {
    ForeignStream old;
    const CUstream handle = old.handle;
    const CUdeviceptr first = workspace_of(old.handle);
    old.destroy();
    ForeignStream next;
    ASSERT_EQ(next.handle, handle) << "the fake driver gives the destroyed handle again";
    EXPECT_NE(workspace_of(next.handle), first)
        << "the new stream shares the workspace of reductions that may still run";
}

TEST_F(ReductionWorkspace, OnlyTheStreamsUsedLastKeepTheirsAndTheRestGoBackAfterTheirEvents) {
    const CUstream release = kd::release_stream(kd::current_context());
    ForeignStream first;
    const CUdeviceptr kept = workspace_of(first.handle);
    const std::vector<FakeOp> recorded = kiln::test::fake_driver_ops();
    const FakeOp* record = latest(recorded, FakeOp::record_event, first.handle);
    ASSERT_NE(record, nullptr);
    const CUevent done = record->event;
    EXPECT_EQ(workspace_of(first.handle), kept);
    first.destroy(); // with its workspace still kept

    std::vector<ForeignStream> others(kd::kStreamWorkspaces - 1);
    for (const ForeignStream& other : others)
        workspace_of(other.handle);
    // One stream more than the context keeps: the destroyed stream's slot, used longest ago, is
    // taken, its memory freed on the release stream after the event of its last launch.
    ForeignStream one_more;
    workspace_of(one_more.handle);
    const std::vector<FakeOp> ops = kiln::test::fake_driver_ops();
    bool waited = false;
    for (const FakeOp& op : ops)
        waited =
            waited || (op.kind == FakeOp::wait_event && op.stream == release && op.event == done);
    EXPECT_TRUE(waited) << "the old workspace's memory went back without waiting for its launches";
    for (const FakeOp& op : ops) {
        if (op.kind == FakeOp::free_memory) {
            EXPECT_EQ(op.stream, release) << "freed elsewhere";
        }
    }
}

TEST_F(ReductionWorkspace, ADefaultStreamKeepsItsWorkspaceWithoutEvents) {
    const CUdeviceptr first = workspace_of(nullptr);
    const std::vector<FakeOp> before = kiln::test::fake_driver_ops(); // empty when run alone
    EXPECT_EQ(workspace_of(nullptr), first);
    const std::vector<FakeOp> after = kiln::test::fake_driver_ops();
    ASSERT_EQ(after.size(), before.size()) << "a default stream's lease recorded an operation";
    // The record keeps the latest operations only: a full one keeps its size as it moves on.
    if (!after.empty())
        EXPECT_EQ(after.back().event, before.back().event)
            << "a default stream's lease recorded an event";
}

TEST_F(ReductionWorkspace, ACapturedStreamAsksForNoIdAndRecordsNothing) {
    ForeignStream stream;
    ASSERT_EQ(kd::driver().cuStreamBeginCapture(stream.handle, CU_STREAM_CAPTURE_MODE_RELAXED),
              CUDA_SUCCESS);
    const unsigned long long ids = calls("cuStreamGetId"), records = calls("cuEventRecord");
    workspace_of(stream.handle);
    EXPECT_EQ(calls("cuStreamGetId"), ids) << "the driver refuses a captured stream's id";
    EXPECT_EQ(calls("cuEventRecord"), records) << "an event recorded there joins the graph";
    CUgraph graph = nullptr;
    ASSERT_EQ(kd::driver().cuStreamEndCapture(stream.handle, &graph), CUDA_SUCCESS);
}

} // namespace
