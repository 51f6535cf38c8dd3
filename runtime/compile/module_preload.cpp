#include "module_preload.hpp"

#include "driver/driver.hpp"
#include "kiln/cache/key.hpp"
#include "kiln/cache/store.hpp"
#include "kiln/compiler.hpp"

#include <atomic>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace kiln::detail {

namespace {

struct Preloaded {
    CUcontext context = nullptr;
    cache::Key content; // of the cubin's bytes
    std::size_t size = 0;
    CUmodule module = nullptr;
};

struct Preloads {
    std::mutex mutex;
    std::vector<Preloaded> modules;
    std::atomic<std::size_t> count{0};
};

// Never destroyed: a module is the process's once loaded, and a call may adopt one during exit.
Preloads& preloads() {
    static auto* p = new Preloads;
    return *p;
}

cache::Key content_of(std::string_view cubin) {
    return cache::KeyBuilder().add("preloaded cubin", cubin).finish();
}

} // namespace

std::size_t preload_read_ahead_modules(CUcontext context) noexcept {
    std::vector<Preloaded> loaded;
    try {
        cache::Store* store = Compiler::global().store();
        if (!store) return 0;
        const Driver& d = driver();
        loaded.reserve(64); // a read-ahead's most
        store->visit_read_ahead_cubins([&](std::string_view cubin,
                                           const std::vector<std::string_view>& kernels) {
            const cache::Key content = content_of(cubin);
            for (const Preloaded& p : loaded) // a memo and the entry it stands for
                if (p.size == cubin.size() && p.content == content) return;
            CUmodule module = nullptr;
            // Another architecture's cubin (or anything but a cubin) is refused: not for here.
            if (d.cuModuleLoadDataEx(&module, cubin.data(), 0, nullptr, nullptr) != CUDA_SUCCESS)
                return;
            std::string name;
            for (std::string_view kernel : kernels) {
                name.assign(kernel);
                CUfunction function = nullptr;
                (void)d.cuModuleGetFunction(&function, module, name.c_str());
            }
            loaded.push_back({context, content, cubin.size(), module});
        });
        if (loaded.empty()) return 0;
        Preloads& p = preloads();
        std::lock_guard<std::mutex> lock(p.mutex);
        p.modules.insert(p.modules.end(), loaded.begin(), loaded.end());
        p.count.store(p.modules.size(), std::memory_order_release);
        return loaded.size();
    } catch (...) {
        // What did not load is loaded by its first call; what did is not kept half-published.
        for (const Preloaded& p : loaded)
            driver().cuModuleUnload(p.module);
        return 0;
    }
}

CUmodule take_preloaded_module(CUcontext context, std::string_view image) noexcept {
    Preloads& p = preloads();
    if (p.count.load(std::memory_order_acquire) == 0) return nullptr;
    try {
        std::optional<cache::Key> content; // hashed only for a module of the same size
        std::lock_guard<std::mutex> lock(p.mutex);
        for (auto it = p.modules.begin(); it != p.modules.end(); ++it) {
            if (it->context != context || it->size != image.size()) continue;
            if (!content) content = content_of(image);
            if (it->content != *content) continue;
            const CUmodule module = it->module;
            p.modules.erase(it);
            p.count.store(p.modules.size(), std::memory_order_release);
            return module;
        }
    } catch (...) {
    }
    return nullptr;
}

} // namespace kiln::detail
