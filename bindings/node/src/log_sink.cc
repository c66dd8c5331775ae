// setLogSink(callback, minLevel): lines arrive on whatever thread logs (a model's worker while
// loading, llama.cpp's threads); they are appended to a buffer, and the first line of a batch
// posts one flush (a non-blocking threadsafe call, so even a line logged on the JS thread never
// waits). The flush runs on the JS thread and hands the callback every line buffered by then,
// as [{level, source, text, timeMs}]. The JS callback never runs on a worker, and never after
// the sink was replaced or removed: the library's SetLogSink waits for lines in flight, and a
// flush already queued finds its pump closed.
#include "log_sink.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "edgellm/log.h"
#include "napi_util.h"

namespace edgellm::node {
namespace {

struct Line {
  LogLevel level;
  std::string source, text;
  double time_ms;
};

struct Pump {
  Channel* channel = nullptr;
  std::mutex mu;
  std::vector<Line> lines;
  size_t dropped = 0;
  bool flush_posted = false;
  bool closed = false;  // set on the JS thread; guarded by mu, as is the channel's use
  LogLevel min_level = LogLevel::kInfo;
  static constexpr size_t kMaxBuffered = 2000;

  // Any thread. The post happens under `mu`, so close() cannot release the channel under it.
  void Offer(const std::shared_ptr<Pump>& self, LogLevel lvl, std::string_view source,
             std::string_view text);
  void Close() {
    std::lock_guard<std::mutex> lock(mu);
    closed = true;
    channel->Release();
    channel = nullptr;
  }
};

// One sink per environment (JS thread of that environment only).
std::mutex g_mu;
std::map<napi_env, std::shared_ptr<Pump>>* g_pumps =
    new std::map<napi_env, std::shared_ptr<Pump>>();

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(system_clock::now().time_since_epoch()).count();
}

void flush(napi_env env, napi_value cb, const std::shared_ptr<Pump>& pump) {
  std::vector<Line> lines;
  size_t dropped = 0;
  {
    std::lock_guard<std::mutex> lock(pump->mu);
    pump->flush_posted = false;
    if (pump->closed) return;
    lines.swap(pump->lines);
    dropped = pump->dropped;
    pump->dropped = 0;
  }
  if (!cb || (lines.empty() && dropped == 0)) return;
  napi_value arr = nullptr;
  napi_create_array_with_length(env, lines.size() + (dropped ? 1 : 0), &arr);
  uint32_t i = 0;
  for (const Line& l : lines) {
    napi_value o = make_object(env);
    set(env, o, "level", log_level_name(l.level));
    set(env, o, "source", l.source);
    set(env, o, "text", l.text);
    set(env, o, "timeMs", l.time_ms);
    napi_set_element(env, arr, i++, o);
  }
  if (dropped) {
    napi_value o = make_object(env);
    set(env, o, "level", "warn");
    set(env, o, "source", "edgellm");
    set(env, o, "text", std::to_string(dropped) + " log lines dropped (the JS thread was busy)");
    set(env, o, "timeMs", now_ms());
    napi_set_element(env, arr, i++, o);
  }
  napi_value undefined = nullptr;
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, cb, 1, &arr, nullptr);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) {  // the app's callback threw: never leave it pending in the binding
    napi_value ignored = nullptr;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

void dispatch(LogLevel lvl, std::string_view source, std::string_view text);

void Pump::Offer(const std::shared_ptr<Pump>& self, LogLevel lvl, std::string_view source,
                 std::string_view text) {
  if (lvl < min_level) return;
  std::lock_guard<std::mutex> lock(mu);
  if (closed) return;
  if (lines.size() < kMaxBuffered) {
    lines.push_back({lvl, std::string(source), std::string(text), now_ms()});
  } else {
    ++dropped;
  }
  if (flush_posted) return;
  flush_posted = channel->TryPost([self](napi_env e, napi_value cb) { flush(e, cb, self); });
}

// The library's one sink, installed with the first pump: every pump (one per environment) gets
// the line.
void dispatch(LogLevel lvl, std::string_view source, std::string_view text) {
  std::vector<std::shared_ptr<Pump>> pumps;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (const auto& [env, p] : *g_pumps) pumps.push_back(p);
  }
  for (const auto& p : pumps) p->Offer(p, lvl, source, text);
}

void uninstall(napi_env env) {
  std::shared_ptr<Pump> old;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_pumps->find(env);
    if (it == g_pumps->end()) return;
    old = it->second;
    g_pumps->erase(it);
    last = g_pumps->empty();
  }
  old->Close();
  if (last) SetLogSink(nullptr);
}

bool parse_level(const std::string& s, LogLevel* out) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (s == log_level_name(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

napi_value SetLogSinkJs(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2] = {};
  NAPI_OK(env, napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
  std::string level_name = "info";
  if (!is_nullish(env, argv[1]) && !get_string(env, argv[1], "minLevel", &level_name)) {
    return nullptr;
  }
  LogLevel level = LogLevel::kInfo;
  if (!parse_level(level_name, &level)) {
    return throw_status(env, Status::InvalidArgument("log level '" + level_name +
                                                     "' must be debug, info, warn or error"));
  }
  uninstall(env);
  if (is_nullish(env, argv[0])) return nullptr;
  napi_valuetype t = napi_undefined;
  napi_typeof(env, argv[0], &t);
  if (t != napi_function) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "the log sink must be a function");
    return nullptr;
  }
  auto pump = std::make_shared<Pump>();
  pump->channel = Channel::Create(env, argv[0], "edgellm.log");
  if (!pump->channel)
    return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  pump->min_level = level;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    first = g_pumps->empty();
    (*g_pumps)[env] = pump;
  }
  if (first) SetLogSink(dispatch, LogLevel::kDebug);
  return nullptr;
}

}  // namespace

bool define_log_sink(napi_env env, napi_value exports) {
  napi_value fn = nullptr;
  return napi_create_function(env, "setLogSink", NAPI_AUTO_LENGTH, SetLogSinkJs, nullptr, &fn) ==
             napi_ok &&
         napi_set_named_property(env, exports, "setLogSink", fn) == napi_ok;
}

void remove_log_sink(napi_env env) { uninstall(env); }

}  // namespace edgellm::node
