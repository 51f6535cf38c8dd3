#include "hooks.hpp"

#include <atomic>

namespace kiln::detail {

namespace {

std::atomic<ContextHook> g_context_made{nullptr};
std::atomic<StreamHook> g_stream_made{nullptr};
std::atomic<StreamHook> g_stream_ending{nullptr};
std::atomic<StreamHook> g_capture_ended{nullptr};

} // namespace

void set_context_made_hook(ContextHook hook) noexcept {
    g_context_made.store(hook, std::memory_order_release);
}

void context_made(CUcontext context) noexcept {
    if (const ContextHook hook = g_context_made.load(std::memory_order_acquire)) hook(context);
}

void set_stream_hooks(StreamHook made, StreamHook ending) noexcept {
    g_stream_made.store(made, std::memory_order_release);
    g_stream_ending.store(ending, std::memory_order_release);
}

void stream_made(CUstream stream) noexcept {
    if (const StreamHook hook = g_stream_made.load(std::memory_order_acquire)) hook(stream);
}

void stream_ending(CUstream stream) noexcept {
    if (const StreamHook hook = g_stream_ending.load(std::memory_order_acquire)) hook(stream);
}

void set_capture_ended_hook(StreamHook hook) noexcept {
    g_capture_ended.store(hook, std::memory_order_release);
}

void capture_ended(CUstream stream) noexcept {
    if (const StreamHook hook = g_capture_ended.load(std::memory_order_acquire)) hook(stream);
}

} // namespace kiln::detail
