#pragma once
// Scratch memory for reductions that split one output across blocks: partial results and
// arrival counters. One workspace per stream, reused by every launch on that stream: launches on
// one stream run in order, and the last block of each split resets its counter to zero, so the
// hot path allocates and clears nothing.
//
// A default stream's workspace is kept per context for good (the stream lives as long as the
// context). Any other stream (a kiln::Stream or a program's own) is told apart by cuStreamGetId,
// unique for the life of the process, so a stream made at a destroyed stream's handle never
// shares the destroyed one's workspace while its reductions may still run. Such streams may end
// without Kiln seeing it, so each context keeps the workspaces of only the kStreamWorkspaces
// streams used last, in memory of the context's release stream (runtime/memory/release_stream.hpp)
// that a stream waits for once when its workspace is made or grows; every launch with one records
// an event on its stream after it is queued (the lease's end), and a workspace that makes room
// for another stream's is freed on the release stream after that event, never on a handle that
// may be gone. What that costs a split reduction on a stream of its own: cuStreamIsCapturing,
// cuStreamGetId and cuEventRecord, host calls of well under a microsecond beside a launch whose
// kernel reads at least 16 vectors per thread of a full wave of blocks.
//
// Under graph capture a launch gets a workspace of its own instead, made, cleared and freed by
// the graph around it (memory nodes): replays on any stream then share nothing with direct calls,
// and a later growth of a stream's workspace cannot free memory a graph still uses.

#include "kiln/memory.hpp"
#include "kiln/stream.hpp"

#include <cuda.h>

#include <cstddef>
#include <mutex>

namespace kiln::detail {

/// The workspaces kept per context for streams other than the default ones.
inline constexpr std::size_t kStreamWorkspaces = 8;

/// A workspace held for one launch: its memory, and the stream's claim on it until the launch is
/// queued. Its end records, on the stream, the point after which the memory may be freed.
class WorkspaceLease {
  public:
    CUdeviceptr partials = 0;
    CUdeviceptr counters = 0;
    /// Under capture: the graph's workspace, freed (a free node) when the lease ends.
    DeviceBuffer owned;

    WorkspaceLease() = default;
    WorkspaceLease(WorkspaceLease&& other) noexcept;
    WorkspaceLease& operator=(WorkspaceLease&& other) noexcept;
    ~WorkspaceLease() { finish(); }

  private:
    friend WorkspaceLease lease_workspace(CUcontext, StreamRef, std::size_t, std::size_t);
    void finish() noexcept;

    /// Held until the launch is queued, so no other thread regrows or frees the memory between.
    std::unique_lock<std::mutex> m_lock;
    CUevent m_done = nullptr; ///< recorded on m_stream at the end, where the workspace has one
    CUstream m_stream = nullptr;
    bool* m_unmarked = nullptr; ///< set when that record fails: the memory is then never freed
};

/// A workspace of at least @p partial_bytes and @p counters zeroed counters for launches on
/// @p stream in @p context (the current context). @throws CudaError when memory runs out.
WorkspaceLease lease_workspace(CUcontext context, StreamRef stream, std::size_t partial_bytes,
                               std::size_t counters);

} // namespace kiln::detail
