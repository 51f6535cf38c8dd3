#include "capture_frees.hpp"

#include "driver/driver.hpp"
#include "driver/hooks.hpp"
#include "kiln/device_guard.hpp"

#include <mutex>
#include <new>
#include <vector>

namespace kiln::detail {

namespace {

struct SetAside {
    CUcontext context;
    CUstream stream;
    CUdeviceptr pointer;
};

struct Waiting {
    std::mutex mutex;
    std::vector<SetAside> blocks; // under mutex; a few at a time, freed at the capture's end
};

Waiting& waiting() {
    static auto* instance = new Waiting; // never destroyed: frees may come during exit
    return *instance;
}

void capture_ended(CUstream stream) noexcept {
    Waiting& w = waiting();
    std::vector<SetAside> due;
    {
        std::lock_guard<std::mutex> lock(w.mutex);
        if (w.blocks.empty()) return;
        for (std::size_t k = 0; k < w.blocks.size();) {
            if (w.blocks[k].stream != stream) {
                ++k;
                continue;
            }
            try {
                due.push_back(w.blocks[k]);
            } catch (const std::bad_alloc&) {
                return; // freed at a later capture's end
            }
            w.blocks[k] = w.blocks.back();
            w.blocks.pop_back();
        }
    }
    for (const SetAside& block : due) {
        const InContext in_allocating_context(block.context);
        driver().cuMemFreeAsync(block.pointer, block.stream);
    }
}

const bool kCaptureHookRegistered = (set_capture_ended_hook(&capture_ended), true);

} // namespace

void free_after_capture(CUcontext context, StreamRef stream, CUdeviceptr pointer) noexcept {
    Waiting& w = waiting();
    std::lock_guard<std::mutex> lock(w.mutex);
    try {
        w.blocks.push_back({context, stream.get(), pointer});
    } catch (const std::bad_alloc&) {
        // Kept for good: freeing it now would be an invalid free node in the capture.
    }
}

std::size_t blocks_waiting_for_capture() noexcept {
    Waiting& w = waiting();
    std::lock_guard<std::mutex> lock(w.mutex);
    return w.blocks.size();
}

} // namespace kiln::detail
