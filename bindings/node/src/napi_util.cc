#include "napi_util.h"

#include <cctype>
#include <chrono>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "worker.h"

namespace edgellm::node {

void throw_last_error(napi_env env, const char* what) {
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) return;
  const napi_extended_error_info* info = nullptr;
  napi_get_last_error_info(env, &info);
  std::string msg = std::string("edgellm: Node-API call failed: ") + what;
  if (info && info->error_message) msg += std::string(" (") + info->error_message + ")";
  napi_throw_error(env, "ERR_EDGELLM_NAPI", msg.c_str());
}

napi_value make_string(napi_env env, const std::string& s) {
  napi_value v = nullptr;
  napi_create_string_utf8(env, s.data(), s.size(), &v);
  return v;
}
napi_value make_number(napi_env env, double d) {
  napi_value v = nullptr;
  napi_create_double(env, d, &v);
  return v;
}
napi_value make_bool(napi_env env, bool b) {
  napi_value v = nullptr;
  napi_get_boolean(env, b, &v);
  return v;
}
napi_value make_object(napi_env env) {
  napi_value v = nullptr;
  napi_create_object(env, &v);
  return v;
}
napi_value parse_json(napi_env env, const std::string& text) {
  napi_value global = nullptr, json = nullptr, parse = nullptr, result = nullptr;
  napi_value arg = make_string(env, text);
  if (napi_get_global(env, &global) != napi_ok ||
      napi_get_named_property(env, global, "JSON", &json) != napi_ok ||
      napi_get_named_property(env, json, "parse", &parse) != napi_ok ||
      napi_call_function(env, json, parse, 1, &arg, &result) != napi_ok) {
    bool pending = false;
    if (napi_is_exception_pending(env, &pending) == napi_ok && pending) {
      napi_value ignored = nullptr;
      napi_get_and_clear_last_exception(env, &ignored);
    }
    napi_get_undefined(env, &result);
  }
  return result;
}

void set(napi_env env, napi_value obj, const char* key, napi_value value) {
  napi_set_named_property(env, obj, key, value);
}
void set(napi_env env, napi_value obj, const char* key, const std::string& value) {
  set(env, obj, key, make_string(env, value));
}
void set(napi_env env, napi_value obj, const char* key, const char* value) {
  set(env, obj, key, make_string(env, value));
}
void set(napi_env env, napi_value obj, const char* key, double value) {
  set(env, obj, key, make_number(env, value));
}
void set(napi_env env, napi_value obj, const char* key, bool value) {
  set(env, obj, key, make_bool(env, value));
}

napi_value make_error(napi_env env, const Status& status) {
  std::string code = std::string("ERR_") + code_name(status.code());
  for (char& c : code) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  napi_value err = nullptr;
  napi_create_error(env, make_string(env, code), make_string(env, status.message()), &err);
  set(env, err, "code", code);
  return err;
}

napi_value throw_status(napi_env env, const Status& status) {
  napi_throw(env, make_error(env, status));
  return nullptr;
}

bool is_nullish(napi_env env, napi_value v) {
  if (!v) return true;
  napi_valuetype t = napi_undefined;
  napi_typeof(env, v, &t);
  return t == napi_undefined || t == napi_null;
}

static bool type_error(napi_env env, const char* what, const char* expected) {
  const std::string msg = std::string(what) + " must be " + expected;
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg.c_str());
  return false;
}

bool get_string(napi_env env, napi_value v, const char* what, std::string* out) {
  napi_valuetype t = napi_undefined;
  napi_typeof(env, v, &t);
  if (t != napi_string) return type_error(env, what, "a string");
  size_t n = 0;
  napi_get_value_string_utf8(env, v, nullptr, 0, &n);
  out->assign(n, '\0');
  napi_get_value_string_utf8(env, v, out->data(), n + 1, &n);
  return true;
}

std::optional<napi_value> get_prop(napi_env env, napi_value obj, const char* key) {
  napi_valuetype t = napi_undefined;
  if (!obj || napi_typeof(env, obj, &t) != napi_ok || t != napi_object) return std::nullopt;
  napi_value v = nullptr;
  if (napi_get_named_property(env, obj, key, &v) != napi_ok || is_nullish(env, v)) {
    return std::nullopt;
  }
  return v;
}

bool opt_number(napi_env env, napi_value obj, const char* key, double* out) {
  auto v = get_prop(env, obj, key);
  if (!v) return true;
  napi_valuetype t = napi_undefined;
  napi_typeof(env, *v, &t);
  if (t != napi_number) return type_error(env, key, "a number");
  napi_get_value_double(env, *v, out);
  return true;
}

bool opt_int(napi_env env, napi_value obj, const char* key, int32_t* out) {
  double d = *out;
  if (!opt_number(env, obj, key, &d)) return false;
  if (!(d >= -2147483648.0 && d <= 2147483647.0) ||
      d != static_cast<double>(static_cast<int64_t>(d))) {
    return type_error(env, key, "an integer");
  }
  *out = static_cast<int32_t>(d);
  return true;
}

bool opt_bool(napi_env env, napi_value obj, const char* key, bool* out) {
  auto v = get_prop(env, obj, key);
  if (!v) return true;
  napi_valuetype t = napi_undefined;
  napi_typeof(env, *v, &t);
  if (t != napi_boolean) return type_error(env, key, "a boolean");
  napi_get_value_bool(env, *v, out);
  return true;
}

bool opt_string(napi_env env, napi_value obj, const char* key, std::string* out) {
  auto v = get_prop(env, obj, key);
  if (!v) return true;
  return get_string(env, *v, key, out);
}

bool get_strings(napi_env env, napi_value v, const char* what, std::vector<std::string>* out) {
  bool is_array = false;
  napi_is_array(env, v, &is_array);
  if (!is_array) return type_error(env, what, "an array of strings");
  uint32_t n = 0;
  napi_get_array_length(env, v, &n);
  out->reserve(out->size() + n);
  for (uint32_t i = 0; i < n; ++i) {
    napi_value e = nullptr;
    napi_get_element(env, v, i, &e);
    std::string s;
    if (!get_string(env, e, what, &s)) return false;
    out->push_back(std::move(s));
  }
  return true;
}

bool opt_strings(napi_env env, napi_value obj, const char* key, std::vector<std::string>* out) {
  auto v = get_prop(env, obj, key);
  if (!v) return true;
  return get_strings(env, *v, key, out);
}

bool read_load_mode(napi_env env, const std::string& mode, LoadMode* out) {
  if (mode == "mmap") {
    *out = LoadMode::kMmap;
  } else if (mode == "read") {
    *out = LoadMode::kRead;
  } else if (mode == "auto") {
    *out = LoadMode::kAuto;
  } else {
    throw_status(env, Status::InvalidArgument("loadMode '" + mode + "' must be auto, mmap or read"));
    return false;
  }
  return true;
}

bool attach_cancel(napi_env env, napi_value holder, std::shared_ptr<std::atomic<bool>> flag) {
  if (is_nullish(env, holder)) return true;
  using Flag = std::shared_ptr<std::atomic<bool>>;
  auto* data = new Flag(std::move(flag));
  napi_value fn = nullptr;
  if (napi_create_function(
          env, "cancel", NAPI_AUTO_LENGTH,
          [](napi_env e, napi_callback_info i) -> napi_value {
            void* d = nullptr;
            napi_get_cb_info(e, i, nullptr, nullptr, nullptr, &d);
            **static_cast<Flag*>(d) = true;
            return nullptr;
          },
          data, &fn) != napi_ok) {
    delete data;
    throw_last_error(env, "napi_create_function");
    return false;
  }
  napi_add_finalizer(
      env, fn, data, [](napi_env, void* d, void*) { delete static_cast<Flag*>(d); }, nullptr,
      nullptr);
  set(env, holder, "cancel", fn);
  return true;
}

bool get_integer(napi_env env, napi_value v, double lo, double hi, int64_t* out) {
  napi_valuetype t = napi_undefined;
  double d = 0;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number ||
      napi_get_value_double(env, v, &d) != napi_ok || !(d >= lo && d <= hi) ||
      d != static_cast<double>(static_cast<int64_t>(d))) {
    return false;
  }
  *out = static_cast<int64_t>(d);
  return true;
}

// ---- Channel ----

static void channel_call_js(napi_env env, napi_value js_cb, void* /*context*/, void* data) {
  auto* fn = static_cast<Channel::Fn*>(data);
  if (env) (*fn)(env, js_cb);  // env is null while the environment shuts down
  delete fn;
}

namespace {
// Channels not yet released, so the env cleanup hook can release what their owners did not.
std::mutex g_channels_mu;
std::unordered_set<Channel*>* g_channels = new std::unordered_set<Channel*>();
}  // namespace

Channel* Channel::Create(napi_env env, napi_value callback, const char* name) {
  auto* ch = new Channel();
  ch->env_ = env;
  napi_value resource_name = make_string(env, name);
  if (is_nullish(env, callback)) callback = nullptr;
  if (napi_create_threadsafe_function(env, callback, nullptr, resource_name, kQueueSize, 1, nullptr,
                                      nullptr, nullptr, channel_call_js, &ch->tsfn_) != napi_ok) {
    delete ch;
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_channels_mu);
  g_channels->insert(ch);
  return ch;
}

// Non-blocking calls with our own wait: a call blocked inside Node-API could not be woken when
// the process exits (process.exit() runs no environment cleanup), a polling one can.
bool Channel::Post(Fn fn) {
  auto* item = new Fn(std::move(fn));
  while (!abandoned_.load(std::memory_order_acquire)) {
    const napi_status st = napi_call_threadsafe_function(tsfn_, item, napi_tsfn_nonblocking);
    if (st == napi_ok) return true;
    if (st != napi_queue_full || shutting_down()) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  delete item;  // napi_closing, released by ReleaseAll(), or the process is going away
  return false;
}

bool Channel::TryPost(Fn fn) {
  if (abandoned_.load(std::memory_order_acquire)) return false;
  auto* item = new Fn(std::move(fn));
  if (napi_call_threadsafe_function(tsfn_, item, napi_tsfn_nonblocking) == napi_ok) return true;
  delete item;
  return false;
}

void Channel::Release() {
  bool mine = false;
  {
    std::lock_guard<std::mutex> lock(g_channels_mu);
    mine = g_channels->erase(this) > 0;
  }
  if (mine) napi_release_threadsafe_function(tsfn_, napi_tsfn_release);
  delete this;
}

void Channel::ReleaseAll(napi_env env) {
  std::lock_guard<std::mutex> lock(g_channels_mu);
  for (auto it = g_channels->begin(); it != g_channels->end();) {
    Channel* ch = *it;
    if (ch->env_ != env) {
      ++it;
      continue;
    }
    ch->abandoned_.store(true, std::memory_order_release);
    napi_release_threadsafe_function(ch->tsfn_, napi_tsfn_abort);
    it = g_channels->erase(it);
  }
}

size_t Channel::LiveCount() {
  std::lock_guard<std::mutex> lock(g_channels_mu);
  return g_channels->size();
}

}  // namespace edgellm::node
