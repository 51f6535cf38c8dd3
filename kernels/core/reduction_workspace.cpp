#include "reduction_workspace.hpp"

#include "driver/per_context_cache.hpp"
#include "driver/stream_capture.hpp"
#include "kiln/memory.hpp"

#include <functional>

namespace kiln::detail {

namespace {

constexpr std::size_t kCounterBlock = 256; // counters region rounded to keep partials aligned

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

std::size_t round_up(std::size_t n, std::size_t to) {
    return (n + to - 1) / to * to;
}

} // namespace

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
    Workspace& workspace = workspaces().get(context, stream.get(), [] { return Workspace{}; });
    WorkspaceLease lease;
    lease.lock = std::unique_lock<std::mutex>(workspace.mutex);
    if (workspace.counters < counters || workspace.partial_bytes < partial_bytes) {
        // Grow geometrically; the old buffer is freed in stream order, after the launches that
        // used it.
        const std::size_t new_counters =
            round_up(std::max(counters, workspace.counters * 2), kCounterBlock / 4);
        const std::size_t new_partials =
            round_up(std::max(partial_bytes, workspace.partial_bytes * 2), kCounterBlock);
        DeviceBuffer buffer(new_counters * 4 + new_partials, stream);
        // Counters start at zero; every launch leaves them at zero.
        buffer.fill_bytes(0);
        workspace.buffer = std::move(buffer);
        workspace.counters = new_counters;
        workspace.partial_bytes = new_partials;
    }
    lease.counters = workspace.buffer.get();
    lease.partials = workspace.buffer.get() + workspace.counters * 4;
    return lease;
}

} // namespace kiln::detail
