// The log sink of the binding: library and llama.cpp lines (include/edgellm/log.h) batched to
// one JS callback. JS thread only.
#pragma once

#include "napi.h"

namespace edgellm::node {

// Adds setLogSink(callback | undefined, minLevel?) to `exports`; false with an exception pending.
bool define_log_sink(napi_env env, napi_value exports);
// Removes the sink of `env` (the environment's cleanup): its callback is never called again.
void remove_log_sink(napi_env env);

}  // namespace edgellm::node
