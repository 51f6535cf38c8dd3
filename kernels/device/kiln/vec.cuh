// The vector a generated kernel loads and stores its elements with. Its own header: a kernel
// whose code uses nothing else of Kiln's device code includes only this (each header costs NVRTC
// compile time in every kernel).
#pragma once

namespace kiln {

/// N elements loaded or stored with one aligned vector access.
template <class T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };

} // namespace kiln
