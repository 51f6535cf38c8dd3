#pragma once
/// @file
/// Everything Kiln offers to user code.

#include "kiln/compiler.hpp"
#include "kiln/device.hpp"
#include "kiln/elementwise_kernel.hpp"
#include "kiln/error.hpp"
#include "kiln/event.hpp"
#include "kiln/launch.hpp"
#include "kiln/memory.hpp"
#include "kiln/module.hpp"
#include "kiln/param_spec.hpp"
#include "kiln/raw_kernel.hpp"
#include "kiln/stream.hpp"
#include "kiln/version.hpp"
