#include "event_pool.hpp"

#include "driver/driver.hpp"

namespace kiln::detail {

CUevent create_timing_event() {
    CUevent event = nullptr;
    KILN_CU(cuEventCreate(&event, CU_EVENT_DEFAULT));
    return event;
}

EventPool& EventPool::instance() {
    static EventPool* pool = new EventPool; // outlives every static and thread-local user
    return *pool;
}

CUevent EventPool::pop(std::vector<CUevent>& events) noexcept {
    if (events.empty()) return nullptr;
    CUevent event = events.back();
    events.pop_back();
    return event;
}

void EventPool::top_up(std::mutex& mutex, std::vector<CUevent>& events, std::size_t count) {
    std::size_t missing = 0;
    {
        std::lock_guard<std::mutex> lock(mutex);
        missing = events.size() < count ? count - events.size() : 0;
    }
    for (std::size_t i = 0; i < missing; ++i) {
        CUevent event = create_timing_event();
        std::lock_guard<std::mutex> lock(mutex);
        events.push_back(event);
    }
}

CUevent EventPool::acquire(CUcontext context) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (CUevent event = pop(m_free[context])) return event;
    }
    return create_timing_event();
}

void EventPool::release(CUcontext context, CUevent event) noexcept {
    try {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_free[context].push_back(event);
    } catch (...) {
        // Out of memory for the free list: the event is merely not reused.
    }
}

void EventPool::reserve(CUcontext context, std::size_t count) {
    std::vector<CUevent>* events = nullptr;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        events = &m_free[context]; // references into an unordered_map stay valid
    }
    top_up(m_mutex, *events, count);
}

CUevent EventPool::acquire_fresh(CUcontext context) {
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (CUevent event = pop(m_fresh[context])) return event;
    }
    return create_timing_event();
}

void EventPool::reserve_fresh(CUcontext context, std::size_t count) {
    std::vector<CUevent>* events = nullptr;
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        events = &m_fresh[context];
    }
    top_up(m_mutex, *events, count);
}

} // namespace kiln::detail
