#include "kiln/graph.hpp"

#include "activity_hook.hpp"
#include "driver.hpp"
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
        throw;
    }
    CUgraph graph = nullptr;
    KILN_CU(cuStreamEndCapture(stream.get(), &graph));
    return Graph(graph);
}

GraphExec Graph::instantiate() const {
    CUgraphExec exec = nullptr;
    KILN_CU(cuGraphInstantiateWithFlags(&exec, m_graph.get(), 0));
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
