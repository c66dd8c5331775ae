// The NativeModel class (see native_model.cc) and the teardown of every live model.
#pragma once

#include "napi.h"

#include <memory>
#include <vector>

namespace edgellm::node {

// The class constructor, or nullptr with an exception pending.
napi_value define_native_model(napi_env env);
struct ModelState;
// The models of `env` not yet disposed (for the app's signals, signals.cc).
std::vector<std::shared_ptr<ModelState>> live_models(napi_env env);
// Cancels every live model of `env` (nullptr: of every environment) and queues the freeing of
// its model and session (teardown).
void close_all_models(napi_env env);

}  // namespace edgellm::node
