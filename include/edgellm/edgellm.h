// edgellm: an on-device LLM runtime over llama.cpp. Include this for the whole public API.
#pragma once

#include "edgellm/device.h"
#include "edgellm/model.h"
#include "edgellm/package.h"
#include "edgellm/planner.h"
#include "edgellm/power.h"
#include "edgellm/quantize.h"
#include "edgellm/session.h"
#include "edgellm/status.h"
#include "edgellm/synth.h"

namespace edgellm {
// "0.1.0"
const char* version();
// The llama.cpp release this build links, e.g. "v0.4.0 (80fb11a)".
const char* llama_build();
}  // namespace edgellm
