#pragma once
/// @file
/// Kiln's spdlog logger, named `kiln`, level from KILN_LOG_LEVEL (default `warn`).

#include <spdlog/spdlog.h>

#include <memory>

namespace kiln {

/// The shared logger; created on first use, writing to stderr. A host program that registered its
/// own spdlog logger named `kiln` before the first call gets that one instead.
/// @return the logger, alive until the end of the program.
/// @throws ConfigError (on first use) when KILN_LOG_LEVEL is not a level name.
spdlog::logger& logger();

} // namespace kiln
