// Small helpers over the plain C Node-API (node_api.h only: no node-addon-api, V8 or libuv),
// so the binding ports to HarmonyOS NAPI by swapping the header.
//
// Thread safety: everything here runs on the JS thread, except Channel::Post / Release and
// the Worker helpers, which any thread may call.
#pragma once

#include "napi.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "edgellm/model.h"
#include "edgellm/status.h"

namespace edgellm::node {

// Returns nullptr from the enclosing napi_callback when a Node-API call fails (a JS exception
// is then pending or gets thrown with the failing call's message).
#define NAPI_OK(env, call)                          \
  do {                                              \
    if ((call) != napi_ok) {                        \
      ::edgellm::node::throw_last_error(env, #call); \
      return nullptr;                               \
    }                                               \
  } while (0)

void throw_last_error(napi_env env, const char* what);

// An Error whose message is status.message() and whose `code` is "ERR_" + the code name in
// upper case (ERR_NOT_FOUND, ERR_CORRUPT_DATA, ERR_CANCELLED, ...).
napi_value make_error(napi_env env, const Status& status);
napi_value throw_status(napi_env env, const Status& status);  // returns nullptr

napi_value make_string(napi_env env, const std::string& s);
napi_value make_number(napi_env env, double v);
napi_value make_bool(napi_env env, bool v);
napi_value make_object(napi_env env);
// JSON.parse(text) of this environment; undefined (and no pending exception) when it throws.
napi_value parse_json(napi_env env, const std::string& text);
void set(napi_env env, napi_value obj, const char* key, napi_value value);
void set(napi_env env, napi_value obj, const char* key, const std::string& value);
void set(napi_env env, napi_value obj, const char* key, const char* value);
void set(napi_env env, napi_value obj, const char* key, double value);
void set(napi_env env, napi_value obj, const char* key, bool value);

// Reading arguments. Each returns false after throwing a TypeError naming `what` when the
// value has the wrong type; an absent (undefined/null) optional value leaves `out` untouched.
bool get_string(napi_env env, napi_value v, const char* what, std::string* out);
bool is_nullish(napi_env env, napi_value v);
// True when `v` is a number holding an integer in [lo, hi] (then in *out). Throws nothing: the
// caller says what was wrong.
bool get_integer(napi_env env, napi_value v, double lo, double hi, int64_t* out);
// obj[key] when obj is an object and the key is present and not undefined/null.
std::optional<napi_value> get_prop(napi_env env, napi_value obj, const char* key);
bool opt_number(napi_env env, napi_value obj, const char* key, double* out);
bool opt_int(napi_env env, napi_value obj, const char* key, int32_t* out);
bool opt_bool(napi_env env, napi_value obj, const char* key, bool* out);
bool opt_string(napi_env env, napi_value obj, const char* key, std::string* out);
bool opt_strings(napi_env env, napi_value obj, const char* key, std::vector<std::string>* out);
// loadMode "auto", "mmap" or "read" into `out`; false with ERR_INVALID_ARGUMENT pending.
bool read_load_mode(napi_env env, const std::string& mode, LoadMode* out);
// An array of strings (TypeError naming `what` otherwise), appended to `out`.
bool get_strings(napi_env env, napi_value v, const char* what, std::vector<std::string>* out);

// Gives the object `holder` (when not nullish) a cancel() method that sets `flag`: how the JS
// layer cancels one call (an AbortSignal's listener calls it). False with an exception pending.
bool attach_cancel(napi_env env, napi_value holder, std::shared_ptr<std::atomic<bool>> flag);

// A one-way pipe from any thread to the JS thread: a threadsafe function whose items are
// closures run on the JS thread with the function given at creation (which may be undefined).
// Items arrive in Post order. Closures are dropped unrun when the environment shuts down.
//
// HarmonyOS rules kept here: calls are always napi_tsfn_nonblocking (a blocking call on a full
// queue from the JS thread hangs there, and there is no napi_would_deadlock); the function is
// released exactly once, by its owner's Release() or, for a channel still open when its
// environment goes away, by ReleaseAll() from the env cleanup hook (HarmonyOS does not clean up
// threadsafe functions of a destroyed environment itself; one left alive there is fatal).
class Channel {
 public:
  using Fn = std::function<void(napi_env env, napi_value js_callback)>;
  // On the JS thread. `callback` may be nullptr/undefined. Queue: kQueueSize items, then
  // Post waits for space (back-pressure on the worker, never on the JS thread).
  static Channel* Create(napi_env env, napi_value callback, const char* name);
  // Any thread but the JS thread. False when the environment is shutting down or the channel
  // was released by ReleaseAll() (the closure was dropped).
  bool Post(Fn fn);
  // Any thread, the JS thread included: one non-blocking attempt, never a wait. False when the
  // queue is full or closing (the closure was dropped).
  bool TryPost(Fn fn);
  // Any thread, once, after the last Post. Deletes this.
  void Release();
  // On the JS thread, from the env cleanup hook after the workers were given time to finish:
  // releases (aborts) every channel of `env` whose owner has not released it yet. Their owners'
  // later Post calls drop the closure and Release() only frees the object.
  static void ReleaseAll(napi_env env);
  // Channels not yet released (for tests and the shutdown trace).
  static size_t LiveCount();

  static constexpr size_t kQueueSize = 64;

 private:
  napi_env env_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;
  std::atomic<bool> abandoned_{false};
};

// A promise and its deferred (napi_create_promise); resolve/reject on the JS thread.
struct Promise {
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
};

}  // namespace edgellm::node
