#pragma once
/// @file
/// Kiln's spdlog logger, named `kiln`, level from KILN_LOG_LEVEL (default `warn`).

#include <spdlog/spdlog.h>

#include <memory>

namespace kiln {

/// The shared logger; created on first use, writing to stderr.
spdlog::logger& logger();

} // namespace kiln
