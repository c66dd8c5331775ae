// NativeRuntime: the JS class behind index.js's Runtime (include/edgellm/runtime.h). Each
// request goes on-device or to the cloud as the scenario policy decides, falls back when the
// planned path fails before any text, and streams through the same callback either way. One
// Worker thread per object creates the Runtime, generates and frees it; route events and text
// batches cross to JS through one Channel per generation, as events: onEvent("route", {...})
// and onEvent("text", text, {index, tokens}).
#include "native_runtime.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "edgellm/runtime.h"
#include "model_state.h"
#include "napi_util.h"
#include "signals.h"
#include "worker.h"

namespace edgellm::node {

struct RuntimeState {
  napi_env env = nullptr;
  std::shared_ptr<Worker> worker;
  PowerGovernor governor;            // the app's signals (signals.cc)
  std::unique_ptr<Runtime> runtime;  // worker thread only
  Channel* current = nullptr;        // worker thread only: the generation's, for route events
  std::mutex mu;
  Runtime* for_cancel = nullptr;  // guarded by mu
  std::atomic<bool> closed{false};
  std::atomic<bool> close_posted{false};

  // Cancels, then frees the runtime on the worker after the queued jobs and runs `done` there.
  // Only the first call does this and returns true.
  bool Close(const std::shared_ptr<RuntimeState>& self, std::function<void()> done = {}) {
    closed = true;
    // Leaves the app's signals: a generation parked by pause() must not wait for a resume()
    // that no longer reaches this runtime.
    governor.Resume();
    (void)governor.SetThermalLevel(-1);
    {
      std::lock_guard<std::mutex> lock(mu);
      if (for_cancel) for_cancel->Cancel();
    }
    if (close_posted.exchange(true)) return false;
    worker->Close([self, done = std::move(done)] {
      {
        std::lock_guard<std::mutex> lock(self->mu);
        self->for_cancel = nullptr;
      }
      self->runtime.reset();
      if (done) done();
    });
    return true;
  }
};

namespace {

std::mutex g_mu;
std::set<std::shared_ptr<RuntimeState>>* g_runtimes = new std::set<std::shared_ptr<RuntimeState>>();

struct Holder {
  std::shared_ptr<RuntimeState> state;
};

void finalize(napi_env, void* data, void*) {
  auto* h = static_cast<Holder*>(data);
  auto state = h->state;
  delete h;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_runtimes->erase(state);
  }
  state->Close(state);
}

std::shared_ptr<RuntimeState> unwrap_runtime(napi_env env, napi_callback_info info, size_t* argc,
                                             napi_value* argv) {
  napi_value self = nullptr;
  if (napi_get_cb_info(env, info, argc, argv, &self, nullptr) != napi_ok) return nullptr;
  void* data = nullptr;
  if (napi_unwrap(env, self, &data) != napi_ok || !data) {
    napi_throw_type_error(env, "ERR_INVALID_THIS", "not a NativeRuntime");
    return nullptr;
  }
  return static_cast<Holder*>(data)->state;
}

napi_value New(napi_env env, napi_callback_info info) {
  napi_value self = nullptr;
  NAPI_OK(env, napi_get_cb_info(env, info, nullptr, nullptr, &self, nullptr));
  auto* h = new Holder{std::make_shared<RuntimeState>()};
  h->state->env = env;
  h->state->worker = Worker::Start();
  apply_signals(h->state->governor);
  if (napi_wrap(env, self, h, finalize, nullptr, nullptr) != napi_ok) {
    h->state->Close(h->state);
    delete h;
    throw_last_error(env, "napi_wrap");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_runtimes->insert(h->state);
  return self;
}

bool read_options(napi_env env, napi_value o, RuntimeOptions* ro) {
  if (!opt_string(env, o, "modelPath", &ro->model_path) ||
      !opt_int(env, o, "threads", &ro->session.n_threads) ||
      !opt_int(env, o, "ctx", &ro->session.n_ctx) ||
      !opt_bool(env, o, "privacy", &ro->privacy_required) ||
      !opt_bool(env, o, "offline", &ro->offline) ||
      !opt_number(env, o, "latencyTargetMs", &ro->latency_target_ms) ||
      !opt_number(env, o, "cloudTtftMs", &ro->cloud_ttft_ms) ||
      !opt_bool(env, o, "preferOnDevice", &ro->prefer_on_device) ||
      !opt_string(env, o, "deviceRoot", &ro->device_root)) {
    return false;
  }
  double ram = 0;
  if (!opt_number(env, o, "ramBytes", &ram)) return false;
  if (ram < 0) {
    throw_status(env, Status::InvalidArgument("ramBytes must be 0 (this device's) or more"));
    return false;
  }
  ro->ram_bytes = static_cast<uint64_t>(ram);
  if (auto c = get_prop(env, o, "cloud")) {
    CloudOptions& co = ro->cloud;
    if (!opt_string(env, *c, "baseUrl", &co.base_url) || !opt_string(env, *c, "model", &co.model) ||
        !opt_string(env, *c, "apiKey", &co.api_key) ||
        !opt_number(env, *c, "connectTimeoutS", &co.connect_timeout_s) ||
        !opt_number(env, *c, "idleTimeoutS", &co.idle_timeout_s) ||
        !opt_int(env, *c, "maxRetries", &co.max_retries)) {
      return false;
    }
  }
  return true;
}

void emit(napi_env env, napi_value cb, const char* kind, napi_value a, napi_value b);

napi_value decision_object(napi_env env, const PolicyDecision& d) {
  napi_value o = make_object(env);
  set(env, o, "route", route_name(d.route));
  set(env, o, "reason", d.reason);
  set(env, o, "localPossible", d.local_possible);
  set(env, o, "localWhy", d.local_why);
  return o;
}

// Posts `job` to the worker; it returns the status and the value builder for the promise.
napi_value runtime_job(napi_env env, const std::shared_ptr<RuntimeState>& state, napi_value cb,
                       std::function<JobResult(RuntimeState&, Channel*)> job) {
  if (state->closed)
    return throw_status(env, Status::FailedPrecondition("the runtime is disposed"));
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, cb, "edgellm.runtime");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  state->worker->Post([state, ch, d = p.deferred, job = std::move(job)] {
    JobResult r = state->closed
                      ? JobResult{Status::FailedPrecondition("the runtime is disposed"), nullptr}
                      : job(*state, ch);
    ch->Post([d, r = std::move(r)](napi_env env, napi_value) {
      if (!r.first.ok()) {
        napi_reject_deferred(env, d, make_error(env, r.first));
        return;
      }
      napi_value v = r.second ? r.second(env) : nullptr;
      if (!v) napi_get_undefined(env, &v);
      napi_resolve_deferred(env, d, v);
    });
    ch->Release();
  });
  return p.promise;
}

// create(options) -> Promise<decision>
napi_value CreateJs(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1] = {};
  auto state = unwrap_runtime(env, info, &argc, argv);
  if (!state) return nullptr;
  RuntimeOptions ro;
  if (!read_options(env, argv[0], &ro)) return nullptr;
  return runtime_job(env, state, nullptr, [ro](RuntimeState& s, Channel*) mutable -> JobResult {
    if (s.runtime) return {Status::FailedPrecondition("this runtime is already created"), nullptr};
    // Called on this worker inside Generate(), before the path's first text.
    ro.on_route = [&s](const RouteReport& rr) {
      if (!s.current) return;
      s.current->Post([route = std::string(route_name(rr.route)), reason = rr.reason,
                       fallback = rr.fallback](napi_env env, napi_value cb) {
        napi_value o = make_object(env);
        set(env, o, "route", route);
        set(env, o, "reason", reason);
        set(env, o, "fallback", fallback);
        emit(env, cb, "route", o, nullptr);
      });
    };
    auto r = Runtime::Create(ro);
    if (!r.ok()) return {r.status(), nullptr};
    s.runtime = std::move(*r);
    std::lock_guard<std::mutex> lock(s.mu);
    s.for_cancel = s.runtime.get();
    PolicyDecision d = s.runtime->decision();
    return {Status::Ok(), [d](napi_env env) { return decision_object(env, d); }};
  });
}

// prepare() -> Promise<void>: loads the on-device model now when the decision is on-device.
napi_value PrepareJs(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  auto state = unwrap_runtime(env, info, &argc, nullptr);
  if (!state) return nullptr;
  return runtime_job(env, state, nullptr, [](RuntimeState& s, Channel*) -> JobResult {
    if (!s.runtime) return {Status::FailedPrecondition("call create() first"), nullptr};
    return {s.runtime->Prepare(), nullptr};
  });
}

void emit(napi_env env, napi_value cb, const char* kind, napi_value a, napi_value b) {
  if (!cb) return;
  napi_value args[3] = {make_string(env, kind), a, b};
  napi_value undefined = nullptr;
  napi_get_undefined(env, &undefined);
  napi_call_function(env, undefined, cb, b ? 3 : 2, args, nullptr);
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (pending) {
    napi_value ignored = nullptr;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

// generate(prompt, options, onEvent) -> Promise<{text, finishReason, stats, route, reason,
// fellBack, failure}>
napi_value GenerateJs(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3] = {};
  auto state = unwrap_runtime(env, info, &argc, argv);
  if (!state) return nullptr;
  std::string prompt;
  GenerateOptions go;
  if (!get_string(env, argv[0], "prompt", &prompt) || !parse_generate_options(env, argv[1], &go)) {
    return nullptr;
  }
  return runtime_job(env, state, argv[2],
                     [prompt, go](RuntimeState& s, Channel* ch) mutable -> JobResult {
                       if (!s.runtime)
                         return {Status::FailedPrecondition("call create() first"), nullptr};
                       go.governor = &s.governor;
                       int index = 0;
                       std::atomic<int32_t> n_gen{0};
                       go.n_gen_out = &n_gen;
                       auto sink = [&](std::string_view piece) {
                         return ch->Post([text = std::string(piece), i = index++,
                                          total = n_gen.load()](napi_env env, napi_value cb) {
                           napi_value meta = make_object(env);
                           set(env, meta, "index", static_cast<double>(i));
                           set(env, meta, "totalTokens", static_cast<double>(total));
                           emit(env, cb, "text", make_string(env, text), meta);
                         });
                       };
                       s.current = ch;
                       auto r = s.runtime->Generate(prompt, go, sink);
                       s.current = nullptr;
                       if (!r.ok()) return {r.status(), nullptr};
                       return {Status::Ok(), [g = *r](napi_env env) {
                                 napi_value o = result_object(env, g.generation, 0, Delivery{});
                                 set(env, o, "route", route_name(g.route));
                                 set(env, o, "reason", g.reason);
                                 set(env, o, "fellBack", g.fell_back);
                                 set(env, o, "failure", g.failure);
                                 return o;
                               }};
                     });
}

napi_value CancelJs(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  auto state = unwrap_runtime(env, info, &argc, nullptr);
  if (!state) return nullptr;
  std::lock_guard<std::mutex> lock(state->mu);
  if (state->for_cancel) state->for_cancel->Cancel();
  return nullptr;
}

napi_value DisposeJs(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  auto state = unwrap_runtime(env, info, &argc, nullptr);
  if (!state) return nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_runtimes->erase(state);
  }
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, nullptr, "edgellm.runtime.dispose");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  const bool first = state->Close(state, [ch, d = p.deferred] {
    ch->Post([d](napi_env env, napi_value) {
      napi_value u = nullptr;
      napi_get_undefined(env, &u);
      napi_resolve_deferred(env, d, u);
    });
    ch->Release();
  });
  if (!first) {  // disposed before: nothing left to wait for
    napi_value u = nullptr;
    napi_get_undefined(env, &u);
    napi_resolve_deferred(env, p.deferred, u);
    ch->Release();
  }
  return p.promise;
}

}  // namespace

napi_value define_native_runtime(napi_env env) {
  const napi_property_descriptor methods[] = {
      {"create", nullptr, CreateJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"prepare", nullptr, PrepareJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"generate", nullptr, GenerateJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"cancel", nullptr, CancelJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"dispose", nullptr, DisposeJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_value cls = nullptr;
  if (napi_define_class(env, "NativeRuntime", NAPI_AUTO_LENGTH, New, nullptr,
                        sizeof(methods) / sizeof(methods[0]), methods, &cls) != napi_ok) {
    return nullptr;
  }
  return cls;
}

void for_each_runtime(napi_env env,
                      const std::function<void(const std::shared_ptr<RuntimeState>&)>& fn) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (const auto& r : *g_runtimes) {
    if (r->env == env) fn(r);
  }
}

PowerGovernor& runtime_governor(const std::shared_ptr<RuntimeState>& r) { return r->governor; }

void release_runtime_kv(const std::shared_ptr<RuntimeState>& r) {
  if (r->closed) return;
  r->worker->Post([r] {
    if (r->runtime && r->runtime->session()) r->runtime->session()->ReleaseKv();
  });
}

void close_all_runtimes(napi_env env) {
  std::vector<std::shared_ptr<RuntimeState>> all;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_runtimes->begin(); it != g_runtimes->end();) {
      if (env == nullptr || (*it)->env == env) {
        all.push_back(*it);
        it = g_runtimes->erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& r : all) r->Close(r);
}

}  // namespace edgellm::node
