#pragma once
/// @file
/// Kiln's one-time start-up work in a process, done ahead of the first kernel call.
///
/// A fresh process's first call would otherwise pay for it: reading the cache settings and
/// checking the cache directory, NVRTC's identity, the NVTX domain, binding the library calls
/// and running once the code a first call runs (a key, a call planned, a memo read). Kiln does
/// this work on the calling thread while a second thread loads the CUDA driver (cuInit takes tens
/// of milliseconds), so a program whose first CUDA work goes through Kiln gets it for free, with
/// the code in the caches of the thread that makes the first call. A program that initializes
/// CUDA itself can call prepare() while it does, best on the thread that will call Kiln first.
///
/// The cache settings are read from the environment then (KILN_CACHE_DIR and the rest): set them
/// before the first Kiln call that touches the device or the cache.

namespace kiln {

/// Does Kiln's one-time start-up work now, if it is not done yet. Thread-safe; never throws: an
/// error (a bad setting in the environment, say) is reported by the call that needs the part
/// that failed, as without prepare().
void prepare() noexcept;

} // namespace kiln
