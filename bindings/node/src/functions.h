// The module's free functions (see functions.cc).
#pragma once

#include <node_api.h>

namespace edgellm::node {

// Adds deviceProfile, memoryUsage, planMemory, pull, listModels and version to `exports`.
bool define_functions(napi_env env, napi_value exports);

}  // namespace edgellm::node
