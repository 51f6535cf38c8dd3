#include "reduction_workspace.hpp"

#include "driver/driver.hpp"
#include "driver/per_context_cache.hpp"
#include "driver/stream_capture.hpp"
#include "kiln/memory.hpp"
#include "memory/release_stream.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <utility>

namespace kiln::detail {

namespace {

constexpr std::size_t kCounterBlock = 256; // counters region rounded to keep partials aligned

std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

// The sizes a workspace grows to: geometrically, so a few launches of growing size regrow it
// only a few times.
struct Sizes {
    std::size_t counters, partial_bytes;
};
Sizes grown(std::size_t have_counters, std::size_t have_partials, std::size_t counters,
            std::size_t partial_bytes) {
    return {round_up(std::max(counters, have_counters * 2), kCounterBlock / 4),
            round_up(std::max(partial_bytes, have_partials * 2), kCounterBlock)};
}

// A default stream's workspace, or a captured stream's: per context and handle, for good.
struct Workspace {
    std::mutex mutex;
    DeviceBuffer buffer;
    std::size_t counters = 0, partial_bytes = 0;
};

struct StreamHash {
    std::size_t operator()(CUstream stream) const noexcept { return std::hash<CUstream>{}(stream); }
};

using Workspaces = PerContextCache<Workspace, CUstream, StreamHash>;

Workspaces& workspaces() {
    // Never destroyed: device memory must not be freed after the driver shuts down at exit.
    static Workspaces* instance = new Workspaces;
    return *instance;
}

// Another stream's workspace, in a context's slot (see the header).
struct StreamWorkspace {
    std::mutex mutex;       // held by a lease until its launch is queued
    bool held = false;      // by the stream of id (both under the slots' mutex)
    std::uint64_t id = 0;   // the stream's cuStreamGetId
    std::uint64_t used = 0; // when last leased, in the context's count of leases
    CUevent done = nullptr; // recorded on the stream after each launch that used the memory
    DeviceBuffer buffer;    // on the release stream
    std::size_t counters = 0, partial_bytes = 0;
    bool unmarked = false; // a launch's end could not be recorded: never freed
};

struct StreamWorkspaces {
    std::mutex mutex; // which stream has which slot
    std::uint64_t leases = 0;
    std::array<StreamWorkspace, kStreamWorkspaces> slots;
};

PerContextCache<StreamWorkspaces>& stream_workspaces() {
    static auto* instance = new PerContextCache<StreamWorkspaces>; // never destroyed, as above
    return *instance;
}

// Under both locks: @p slot's memory goes back, on @p release after the last launch that used it.
// The slot is then empty, ready for another stream. Throws std::bad_alloc (the host out of memory)
// with the slot left as it was.
void retire(StreamWorkspace& slot, CUstream release) {
    if (slot.buffer.get()) {
        if (slot.unmarked || driver().cuStreamWaitEvent(release, slot.done, 0) != CUDA_SUCCESS)
            new DeviceBuffer(std::move(slot.buffer)); // its last use unknown: never freed
        else
            slot.buffer = DeviceBuffer(); // freed on the release stream, after the wait
    }
    slot.counters = slot.partial_bytes = 0;
    slot.unmarked = false;
}

// Under the slot's lock: room for @p counters and @p partial_bytes for launches on @p stream.
void grow(StreamWorkspace& slot, CUstream stream, CUstream release, std::size_t counters,
          std::size_t partial_bytes) {
    if (!slot.done) KILN_CU(cuEventCreate(&slot.done, CU_EVENT_DISABLE_TIMING));
    const Sizes size = grown(slot.counters, slot.partial_bytes, counters, partial_bytes);
    // The old memory's free, on the release stream, comes after the launches that used it.
    if (slot.buffer.get()) {
        KILN_CU(cuEventRecord(slot.done, stream));
        KILN_CU(cuStreamWaitEvent(release, slot.done, 0));
    }
    DeviceBuffer buffer(size.counters * 4 + size.partial_bytes, release);
    buffer.fill_bytes(0); // counters start at zero; every launch leaves them at zero
    // The stream's launches come after the allocation and the zeroing.
    KILN_CU(cuEventRecord(slot.done, release));
    KILN_CU(cuStreamWaitEvent(stream, slot.done, 0));
    slot.buffer = std::move(buffer);
    slot.counters = size.counters;
    slot.partial_bytes = size.partial_bytes;
}

// A default or captured stream's workspace, locked into @p lock: its address and counters.
void lease_default(CUcontext context, StreamRef stream, std::size_t partial_bytes,
                   std::size_t counters, std::unique_lock<std::mutex>& lock, CUdeviceptr& base,
                   std::size_t& counter_slots) {
    Workspace& workspace = workspaces().get(context, stream.get(), [] { return Workspace{}; });
    lock = std::unique_lock<std::mutex>(workspace.mutex);
    if (workspace.counters < counters || workspace.partial_bytes < partial_bytes) {
        // The old buffer is freed in stream order, after the launches that used it.
        const Sizes size =
            grown(workspace.counters, workspace.partial_bytes, counters, partial_bytes);
        DeviceBuffer buffer(size.counters * 4 + size.partial_bytes, stream);
        buffer.fill_bytes(0);
        workspace.buffer = std::move(buffer);
        workspace.counters = size.counters;
        workspace.partial_bytes = size.partial_bytes;
    }
    base = workspace.buffer.get();
    counter_slots = workspace.counters;
}

bool default_stream(CUstream stream) {
    return !stream || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

} // namespace

WorkspaceLease::WorkspaceLease(WorkspaceLease&& other) noexcept
    : partials(std::exchange(other.partials, 0))
    , counters(std::exchange(other.counters, 0))
    , owned(std::move(other.owned))
    , m_lock(std::move(other.m_lock))
    , m_done(std::exchange(other.m_done, nullptr))
    , m_stream(std::exchange(other.m_stream, nullptr))
    , m_unmarked(std::exchange(other.m_unmarked, nullptr)) {}

WorkspaceLease& WorkspaceLease::operator=(WorkspaceLease&& other) noexcept {
    if (this != &other) {
        finish();
        partials = std::exchange(other.partials, 0);
        counters = std::exchange(other.counters, 0);
        owned = std::move(other.owned);
        m_lock = std::move(other.m_lock);
        m_done = std::exchange(other.m_done, nullptr);
        m_stream = std::exchange(other.m_stream, nullptr);
        m_unmarked = std::exchange(other.m_unmarked, nullptr);
    }
    return *this;
}

void WorkspaceLease::finish() noexcept {
    if (m_done && driver().cuEventRecord(m_done, m_stream) != CUDA_SUCCESS) *m_unmarked = true;
    m_done = nullptr;
    if (m_lock.owns_lock()) m_lock.unlock();
}

WorkspaceLease lease_workspace(CUcontext context, StreamRef stream, std::size_t partial_bytes,
                               std::size_t counters) {
    if (stream_capturing(stream)) {
        WorkspaceLease lease;
        const std::size_t counter_bytes = round_up(counters, kCounterBlock / 4) * 4;
        lease.owned = DeviceBuffer(counter_bytes + round_up(partial_bytes, kCounterBlock), stream);
        lease.owned.fill_bytes(0); // a memset node: every replay starts with zeroed counters
        lease.counters = lease.owned.get();
        lease.partials = lease.owned.get() + counter_bytes;
        return lease;
    }
    WorkspaceLease lease;
    CUdeviceptr base = 0;
    std::size_t counter_slots = 0;
    unsigned long long id = 0;
    if (default_stream(stream.get()) || driver().cuStreamGetId(stream.get(), &id) != CUDA_SUCCESS) {
        lease_default(context, stream, partial_bytes, counters, lease.m_lock, base, counter_slots);
    } else {
        StreamWorkspaces& all =
            stream_workspaces().get(context, NoKey{}, [] { return StreamWorkspaces{}; });
        std::unique_lock<std::mutex> pick(all.mutex);
        StreamWorkspace* slot = nullptr;
        for (StreamWorkspace& s : all.slots)
            if (s.held && s.id == id) slot = &s;
        const bool fresh = !slot;
        if (fresh) { // an empty slot, else the one leased longest ago
            slot = &all.slots[0];
            for (StreamWorkspace& s : all.slots)
                if (s.used < slot->used) slot = &s;
        }
        slot->used = ++all.leases;
        // Waits out a launch being queued with this slot's memory (another thread, same stream,
        // or the stream whose slot this is about to become another's).
        std::unique_lock<std::mutex> hold(slot->mutex);
        if (fresh) {
            retire(*slot, release_stream(context));
            slot->held = true;
            slot->id = id;
        }
        pick.unlock();
        if (slot->counters < counters || slot->partial_bytes < partial_bytes)
            grow(*slot, stream.get(), release_stream(context), counters, partial_bytes);
        base = slot->buffer.get();
        counter_slots = slot->counters;
        lease.m_lock = std::move(hold);
        lease.m_done = slot->done;
        lease.m_stream = stream.get();
        lease.m_unmarked = &slot->unmarked;
    }
    lease.counters = base;
    lease.partials = base + counter_slots * 4;
    return lease;
}

} // namespace kiln::detail
