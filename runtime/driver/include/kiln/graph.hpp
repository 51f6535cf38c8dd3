#pragma once
/// @file
/// CUDA graphs made by stream capture, and their launches: an owning, move-only Graph and
/// GraphExec. Launches through Kiln are timed as Activity::graph; work issued through Kiln while
/// a stream is captured is timed each time the graph runs.
///
/// @code
/// kiln::Stream stream;
/// kiln::Graph graph = kiln::Graph::capture(stream, [&] {
///     scale(kiln::LaunchConfig{{blocks}, {256}, 0, stream}, x, 2.0f, n);
///     shift(kiln::LaunchConfig{{blocks}, {256}, 0, stream}, x, 1.0f, n);
/// });
/// kiln::GraphExec exec = graph.instantiate();
/// exec.launch(stream);
/// @endcode

#include "kiln/stream.hpp"

#include <cuda.h>

#include <functional>
#include <memory>

namespace kiln {

class GraphExec;

/// An owned CUDA graph.
class Graph {
  public:
    /// Take ownership of @p graph (destroyed with the object).
    /// @param graph a graph, or nullptr.
    explicit Graph(CUgraph graph) noexcept
        : m_graph(graph) {}

    /// Capture into a graph the work that @p work enqueues on @p stream (which must not be the
    /// legacy default stream). @p mode: CUDA's capture mode; in the default global mode, calls
    /// that may synchronize are forbidden on every thread while capturing. If @p work throws, the
    /// capture is ended and discarded and the exception passes on.
    /// @param stream the stream to capture; work @p work queues on streams that wait on it (through
    /// events) is captured too, as CUDA does.
    /// @param work what to capture; called once, on the calling thread.
    /// @param mode CUDA's capture mode.
    /// Every front end may be captured; memory allocated inside is the graph's (docs/graphs.md
    /// says who owns a replay's outputs and how long they live).
    /// @return the captured graph.
    /// @throws CaptureError when the capture was invalidated by a call it refused (what @p work
    /// throws passes on: a refused call is a CaptureError naming it), CudaError, NoDeviceError.
    static Graph capture(StreamRef stream, const std::function<void()>& work,
                         CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL);

    /// An executable instance of the graph, which may be launched many times. Instantiated with
    /// CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH: each launch first frees what the previous
    /// launch allocated and left allocated (outputs allocated in the capture and kept past it).
    /// CUDA allows one instance at a time of a graph that allocates memory.
    /// @return the instance; it does not depend on this Graph afterwards.
    /// @throws CudaError.
    GraphExec instantiate() const;

    /// The driver handle.
    /// @return the driver handle, owned by this object.
    CUgraph get() const noexcept { return m_graph.get(); }

  private:
    struct Deleter {
        void operator()(CUgraph graph) const noexcept;
    };
    std::unique_ptr<CUgraph_st, Deleter> m_graph;
};

/// An owned executable graph.
class GraphExec {
  public:
    /// Take ownership of @p exec (destroyed with the object).
    /// @param exec an executable graph, or nullptr.
    explicit GraphExec(CUgraphExec exec) noexcept
        : m_exec(exec) {}

    /// Launch on @p stream, timed as Activity::graph.
    /// @param stream the stream the graph runs on.
    /// @throws CudaError.
    void launch(StreamRef stream = {}) const;

    /// The driver handle.
    /// @return the driver handle, owned by this object.
    CUgraphExec get() const noexcept { return m_exec.get(); }

  private:
    struct Deleter {
        void operator()(CUgraphExec exec) const noexcept;
    };
    std::unique_ptr<CUgraphExec_st, Deleter> m_exec;
};

/// Launch an executable graph the application owns on @p stream, timed as Activity::graph.
/// @param graph the executable graph; it stays the application's.
/// @param stream the stream the graph runs on.
/// @throws CudaError, NoDeviceError.
void launch_graph(CUgraphExec graph, StreamRef stream = {});

} // namespace kiln
