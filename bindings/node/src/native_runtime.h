// NativeRuntime (native_runtime.cc): routing and cloud fallback from JS.
#pragma once

#include <functional>
#include <memory>

#include "edgellm/power.h"
#include "napi.h"

namespace edgellm::node {

struct RuntimeState;

// The class constructor, or nullptr with an exception pending.
napi_value define_native_runtime(napi_env env);
// Runs `fn` on every live runtime of `env` (under the registry's lock: keep it short).
void for_each_runtime(napi_env env,
                      const std::function<void(const std::shared_ptr<RuntimeState>&)>& fn);
PowerGovernor& runtime_governor(const std::shared_ptr<RuntimeState>& r);
// Queues the freeing of the runtime's on-device KV cache (memory level LOW and CRITICAL).
void release_runtime_kv(const std::shared_ptr<RuntimeState>& r);
// Cancels every live runtime of `env` (nullptr: of every environment) and queues its freeing.
void close_all_runtimes(napi_env env);

}  // namespace edgellm::node
