#pragma once
// The fake driver's record of its latest stream-ordered operations (tests/support/fake_driver.cpp):
// event records, waits and frees, oldest first, so a test can follow a block from the stream it
// was freed on to the stream it goes back to the driver on.

#include <cuda.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

#include <dlfcn.h>

namespace kiln::test {

struct FakeOp {
    enum Kind : int { record_event = 1, wait_event = 2, free_memory = 3 } kind;
    CUstream stream;    ///< recorded on, waiting, or freed on
    CUevent event;      ///< recorded or waited for (records and waits)
    CUdeviceptr memory; ///< freed (frees)
};

/// How many operations the fake driver remembers.
inline constexpr int kFakeOpsKept = 64;

/// The fake driver's latest operations, oldest first; empty when it is not the driver loaded.
inline std::vector<FakeOp> fake_driver_ops() {
    using OpsFunction = int (*)(FakeOp*, int);
    static const auto function = [] {
        const char* library = std::getenv("KILN_DRIVER_LIBRARY");
        void* handle = library ? dlopen(library, RTLD_NOW | RTLD_NOLOAD) : nullptr;
        return handle ? reinterpret_cast<OpsFunction>(dlsym(handle, "kiln_fake_driver_ops"))
                      : nullptr;
    }();
    std::vector<FakeOp> ops(kFakeOpsKept);
    ops.resize(function ? static_cast<std::size_t>(function(ops.data(), kFakeOpsKept)) : 0);
    return ops;
}

} // namespace kiln::test
