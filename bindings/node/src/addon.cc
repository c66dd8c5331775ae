// Module entry of the addon: edgellm.node for Node.js, libedgellm.so for HarmonyOS NAPI, one
// source (napi.h says which rules it keeps). See docs/node.md and docs/harmonyos.md.
#include "napi.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

#include "edgellm/edgellm.h"

#include "functions.h"
#include "log_sink.h"
#include "napi_util.h"
#include "native_model.h"
#include "native_retrieval.h"
#include "native_runtime.h"
#include "signals.h"
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
  close_all_runtimes(env);
  close_all_indexes(env);  // before the embedders they hold
  close_all_embedders(env);
  const bool done = wait_for_threads(std::chrono::seconds(10));
  if (trace) std::fprintf(stderr, "edgellm: %s: native threads ended: %d\n", when, done);
  if (!done) std::fprintf(stderr, "edgellm: native threads still running 10 s after %s\n", when);
}

// HarmonyOS does not clean up the threadsafe functions of a destroyed environment (a live one
// there is fatal): after the workers were given their time, release whatever is still open.
void cleanup(void* arg) {
  auto env = static_cast<napi_env>(arg);
  remove_log_sink(env);
  stop_everything(env, "environment cleanup");
  const size_t live = Channel::LiveCount();
  Channel::ReleaseAll(env);
  if (std::getenv("EDGELLM_NODE_TRACE")) {
    std::fprintf(stderr, "edgellm: environment cleanup: channels open: %zu, released: %zu\n", live,
                 live - Channel::LiveCount());
  }
}

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
  napi_value rt = define_native_runtime(env);
  napi_value emb = define_native_embedder(env);
  napi_value idx = define_native_index(env);
  napi_value shutdown = nullptr;
  if (!cls || !emb || napi_set_named_property(env, exports, "NativeEmbedder", emb) != napi_ok ||
      !idx || napi_set_named_property(env, exports, "NativeIndex", idx) != napi_ok || napi_set_named_property(env, exports, "NativeModel", cls) != napi_ok || !rt ||
      napi_set_named_property(env, exports, "NativeRuntime", rt) != napi_ok ||
      !define_functions(env, exports) || !define_signals(env, exports) ||
      !define_log_sink(env, exports) ||
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

// One registration for both hosts. HarmonyOS's loader records only modules that call
// napi_module_register while the library is being dlopen()ed and never looks up
// napi_register_module_v1 (what NAPI_MODULE defines), so the module registers from a
// constructor; Node.js honours the same call. nm_modname must equal the library's name without
// "lib" and ".so" (libedgellm.so -> "edgellm"). tests/napi_symbols_test.sh checks that the addon
// exports no napi_register_module_v1, so this is the path Node takes too.
namespace {
napi_module g_module = {
    /*nm_version=*/1,
    /*nm_flags=*/0,
    /*nm_filename=*/nullptr,
    /*nm_register_func=*/edgellm::node::init,
    /*nm_modname=*/"edgellm",
    /*nm_priv=*/nullptr,
    /*reserved=*/{nullptr, nullptr, nullptr, nullptr},
};
}  // namespace

extern "C" __attribute__((constructor)) void edgellm_register_module() {
  napi_module_register(&g_module);
}
