// Deterministic warp and block reductions over any accumulator type, and reads of other blocks'
// partial results: all a generated reduction needs of Kiln's device code when the user's code uses
// none of it (reduction.cuh adds pairs, type limits and the argmin / argmax merges).
#pragma once

namespace kiln {

/// Any trivially copyable value shuffled down @p delta lanes, four bytes at a time.
template <class T> __device__ __forceinline__ T shfl_down(const T& value, int delta) {
    constexpr int kWords = (sizeof(T) + 3) / 4;
    unsigned words[kWords];
    memcpy(words, &value, sizeof(T));
#pragma unroll
    for (int k = 0; k < kWords; ++k)
        words[k] = __shfl_down_sync(0xffffffffu, words[k], delta);
    T result = value;
    memcpy(&result, words, sizeof(T));
    return result;
}

/// A value written by another block, read past the (incoherent) L1 cache.
template <class T> __device__ __forceinline__ T load_cg(const T* address) {
    T result;
    if constexpr (sizeof(T) % 4 == 0) {
        unsigned words[sizeof(T) / 4];
#pragma unroll
        for (int k = 0; k < int(sizeof(T) / 4); ++k)
            words[k] = __ldcg(reinterpret_cast<const unsigned*>(address) + k);
        memcpy(&result, words, sizeof(T));
    } else {
        unsigned char bytes[sizeof(T)];
#pragma unroll
        for (int k = 0; k < int(sizeof(T)); ++k)
            bytes[k] = __ldcg(reinterpret_cast<const unsigned char*>(address) + k);
        memcpy(&result, bytes, sizeof(T));
    }
    return result;
}

/// Reduce the accumulators of each group of kLanes lanes (a power of two) into the group's first
/// lane, lower lanes on the left: a fixed tree, so the result is the same on every run. Every lane
/// of the warp must take part.
template <int kLanes = 32, class Acc> __device__ __forceinline__ void warp_reduce(Acc& acc) {
#pragma unroll
    for (int delta = kLanes / 2; delta > 0; delta >>= 1)
        acc.merge(shfl_down(acc, delta));
}

/// Reduce the accumulators of a block of kBlock threads (a multiple of 32, threadIdx.x only) into
/// thread 0. @p scratch holds 32 accumulators; the function ends with the block synchronized.
template <int kBlock, class Acc>
__device__ __forceinline__ Acc block_reduce(Acc acc, Acc* scratch) {
    warp_reduce(acc);
    if (kBlock == 32) return acc;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) scratch[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        if (lane < kBlock / 32) {
            acc = scratch[lane];
        } else {
            acc.init();
        }
        warp_reduce(acc);
    }
    __syncthreads();
    return acc;
}

} // namespace kiln
