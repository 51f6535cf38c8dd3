#pragma once
// NVRTC and nvJitLink, opened at run time. The library defines the C entry points it calls
// (nvrtc.h's, and nvJitLink.h's versioned ones); each opens its library with dlopen on its first
// call and forwards to the library's own function. Linked at build time instead, the loader would
// relocate and initialize both libraries (~200 MB) before main() in every process: about 25 ms of
// CPU on every `kiln` command, also those that compile nothing (bench/cli_startup.sh).
//
// Each library is looked up by its SONAME first (LD_LIBRARY_PATH and the loader's cache), then at
// the path the build found it; kept open for the life of the process.

namespace kiln::detail {

/// The address of NVRTC's own nvrtcVersion, opening NVRTC if need be: the address dladdr and the
/// build-id reader look at (never `&nvrtcVersion`, which is this library's forwarding function).
/// @throws Error naming the library and why it could not be opened.
const void* nvrtc_address();

/// The address of nvJitLink's own nvJitLinkVersion, as nvrtc_address(). @throws Error as it.
const void* nvjitlink_address();

} // namespace kiln::detail
