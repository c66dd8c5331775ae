// The module's free functions (see functions.cc).
#pragma once

#include "napi.h"

#include <functional>

#include "edgellm/status.h"
#include "napi_util.h"

namespace edgellm::node {

// Adds deviceProfile, memoryUsage, planMemory and version to `exports`, and the store's
// functions (store_js.cc).
bool define_functions(napi_env env, napi_value exports);
// pull, listModels, ensureModel, verifyModel, removeModel (store_js.cc).
bool define_store_functions(napi_env env, napi_value exports);

// Runs `work` on a counted thread. `work` may post progress through the Channel (whose JS
// callback is `progress_cb`) and returns the closure that settles the promise on the JS thread.
using Settle = std::function<void(napi_env env, napi_deferred d)>;
napi_value run_async(napi_env env, napi_value progress_cb, const char* name,
                     std::function<Settle(Channel*)> work);
Settle reject_with(const Status& st);
// Calls `cb(arg)` on the JS thread; an exception it throws is cleared, never left pending.
void call(napi_env env, napi_value cb, napi_value arg);

}  // namespace edgellm::node
