#include "kiln/graph.hpp"

#include "activity_hook.hpp"
#include "driver.hpp"
#include "hooks.hpp"
#include "kiln/device.hpp"

namespace kiln {

Graph Graph::capture(StreamRef stream, const std::function<void()>& work,
                     CUstreamCaptureMode mode) {
    detail::current_context();
    KILN_CU(cuStreamBeginCapture(stream.get(), mode));
    try {
        work();
    } catch (...) {
        CUgraph partial = nullptr;
        detail::driver().cuStreamEndCapture(stream.get(), &partial);
        if (partial) detail::driver().cuGraphDestroy(partial);
        detail::capture_ended(stream.get());
        throw;
    }
    CUgraph graph = nullptr;
    const CUresult result = detail::driver().cuStreamEndCapture(stream.get(), &graph);
    // memory/: blocks made before the capture and dropped inside it go back now.
    detail::capture_ended(stream.get());
    if (result != CUDA_SUCCESS)
        detail::throw_cuda_error(result, "kiln::Graph::capture: cuStreamEndCapture(stream, &graph)",
                                 __FILE__, __LINE__);
    return Graph(graph);
}

GraphExec Graph::instantiate() const {
    CUgraphExec exec = nullptr;
    // An output allocated in the capture and kept past it is a graph allocation left unfreed by
    // each launch; without this flag the next launch would fail (CUDA_ERROR_INVALID_VALUE). With
    // it, each launch frees the previous launch's unfreed allocations first (docs/graphs.md).
    KILN_CU(cuGraphInstantiateWithFlags(&exec, m_graph.get(),
                                        CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH));
    return GraphExec(exec);
}

void Graph::Deleter::operator()(CUgraph graph) const noexcept {
    detail::driver().cuGraphDestroy(graph);
}

void GraphExec::launch(StreamRef stream) const {
    launch_graph(m_exec.get(), stream);
}

void GraphExec::Deleter::operator()(CUgraphExec exec) const noexcept {
    detail::driver().cuGraphExecDestroy(exec);
}

void launch_graph(CUgraphExec graph, StreamRef stream) {
    detail::ObservedActivity observed(Activity::graph, "graph launch", 0, stream);
    KILN_CU(cuGraphLaunch(graph, stream.get()));
    observed.done();
}

} // namespace kiln
