#pragma once
// compile/'s part of kiln::prepare() (kiln/startup.hpp): the cache's settings and checks, the
// read-ahead of what this program used last time, the memo's code run once, NVRTC's identity and
// a key computed once.
// compiler.cpp adds it as a prepare step, so every program that compiles or loads kernels has it.

namespace kiln::detail {

/// The step; never throws (each part that fails is reported by the call that needs it).
void prepare_compiling();

} // namespace kiln::detail
