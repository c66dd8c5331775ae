// Module entry of edgellm.node. Written against the plain C Node-API (node_api.h), so the same
// source builds for HarmonyOS NAPI by swapping the header. See docs/node.md.
#include <node_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "edgellm/edgellm.h"

#include "functions.h"
#include "native_model.h"
#include "worker.h"

namespace edgellm::node {
namespace {

// At environment teardown (process exit, worker_threads exit): stop every generation and wait
// for the native threads to free their models, so none runs while the addon is unloaded. Node
// closes the threadsafe functions first, so a worker blocked on a full queue wakes up.
void stop_everything(napi_env env, const char* when) {
  const bool trace = std::getenv("EDGELLM_NODE_TRACE") != nullptr;
  set_shutting_down();
  close_all_models(env);
  const bool done = wait_for_threads(std::chrono::seconds(10));
  if (trace) std::fprintf(stderr, "edgellm: %s: native threads ended: %d\n", when, done);
  if (!done) std::fprintf(stderr, "edgellm: native threads still running 10 s after %s\n", when);
}

void cleanup(void* env) { stop_everything(static_cast<napi_env>(env), "environment cleanup"); }

// The JS layer calls shutdown() from process.on('exit'): process.exit() skips environment
// cleanup, and exit() would then destroy llama.cpp's function-local statics (registered after
// any atexit of ours) under a generation still running on a worker.
napi_value Shutdown(napi_env env, napi_callback_info) {
  stop_everything(env, "process exit");
  return nullptr;
}

// Last resort for an exit that bypasses both.
void at_exit() { stop_everything(nullptr, "exit"); }

napi_value init(napi_env env, napi_value exports) {
  napi_value cls = define_native_model(env);
  napi_value shutdown = nullptr;
  if (!cls || napi_set_named_property(env, exports, "NativeModel", cls) != napi_ok ||
      !define_functions(env, exports) ||
      napi_create_function(env, "shutdown", NAPI_AUTO_LENGTH, Shutdown, nullptr, &shutdown) !=
          napi_ok ||
      napi_set_named_property(env, exports, "shutdown", shutdown) != napi_ok) {
    napi_throw_error(env, "ERR_EDGELLM_INIT", "edgellm: cannot initialize the addon");
    return nullptr;
  }
  napi_add_env_cleanup_hook(env, cleanup, env);
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(at_exit);
    // Fixed malloc thresholds, so a disposed model's memory leaves the process (see
    // edgellm::TuneAllocator). Process-wide; EDGELLM_MALLOC_TUNING=0 leaves the host's allocator
    // settings alone.
    const char* tuning = std::getenv("EDGELLM_MALLOC_TUNING");
    if (!tuning || std::string_view(tuning) != "0") edgellm::TuneAllocator();
  });
  return exports;
}

}  // namespace
}  // namespace edgellm::node

NAPI_MODULE(NODE_GYP_MODULE_NAME, edgellm::node::init)
