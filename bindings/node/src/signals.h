// The app's platform signals into the binding (HarmonyOS hands an app levels, not sysfs):
// setThermalLevel(0..6), setMemoryLevel(0..2), pause()/resume(), signals(). The level ->
// threads/yield/pause mapping is PowerGovernor's (include/edgellm/power.h); the memory policy
// is in signals.cc and docs/node.md. JS thread unless a comment says otherwise.
#pragma once

#include "edgellm/power.h"
#include "napi.h"

namespace edgellm::node {

// Adds the signal functions to `exports`; false with an exception pending.
bool define_signals(napi_env env, napi_value exports);
// A new model or runtime starts at the current thermal level and pause state.
void apply_signals(PowerGovernor& governor);

}  // namespace edgellm::node
