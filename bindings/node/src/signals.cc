// The app's signals: thermal level, memory level, pause/resume (signals.h), and the worker side
// of memory pressure (ModelState::Unload / EnsureLoaded).
//
// Memory policy (the app's onMemoryLevel: MODERATE 0, LOW 1, CRITICAL 2):
//   MODERATE  nothing is freed (the level is recorded; the app may still act on its own).
//   LOW       every model frees its KV cache and compute buffers once its queued work is done
//             (Session::ReleaseKv; rebuilt on the next request, a cold prefill).
//   CRITICAL  every model also frees its weights once its queued work is done; its
//             conversations are parked (options and history kept) and the next request on the
//             model loads the same file with the same options again (stats.reloaded) and
//             recreates them: nothing the app holds becomes invalid.
// A generation running when the signal arrives finishes first (cancel it to free memory now).
// Runtimes (native_runtime.cc) free their KV cache at LOW and CRITICAL; their weights stay.
#include "signals.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>

#include "model_state.h"
#include "napi_util.h"
#include "native_model.h"
#include "native_runtime.h"

namespace edgellm::node {
namespace {

std::atomic<int32_t> g_thermal_level{-1};
std::atomic<int32_t> g_memory_level{-1};
std::atomic<bool> g_paused{false};

bool read_level(napi_env env, napi_callback_info info, int32_t lo, int32_t hi, const char* what,
                int32_t* out) {
  size_t argc = 1;
  napi_value argv[1] = {};
  int64_t v = 0;
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok) return false;
  if (!get_integer(env, argv[0], lo, hi, &v)) {
    throw_status(env, Status::InvalidArgument(std::string(what) + " must be an integer from " +
                                              std::to_string(lo) + " to " + std::to_string(hi)));
    return false;
  }
  *out = static_cast<int32_t>(v);
  return true;
}

// setThermalLevel(level): 0 COOL .. 6 EMERGENCY, or -1 to go back to the sysfs reader.
napi_value SetThermalLevelJs(napi_env env, napi_callback_info info) {
  int32_t level = 0;
  if (!read_level(env, info, -1, 6, "thermal level", &level)) return nullptr;
  g_thermal_level = level;
  for (const auto& m : live_models(env)) (void)m->governor.SetThermalLevel(level);  // in range
  for_each_runtime(env, [level](const std::shared_ptr<RuntimeState>& r) {
    (void)runtime_governor(r).SetThermalLevel(level);
  });
  return nullptr;
}

napi_value PauseJs(napi_env env, napi_callback_info) {
  g_paused = true;
  for (const auto& m : live_models(env)) m->governor.Pause();
  for_each_runtime(env,
                   [](const std::shared_ptr<RuntimeState>& r) { runtime_governor(r).Pause(); });
  return nullptr;
}

napi_value ResumeJs(napi_env env, napi_callback_info) {
  g_paused = false;
  for (const auto& m : live_models(env)) m->governor.Resume();
  for_each_runtime(env,
                   [](const std::shared_ptr<RuntimeState>& r) { runtime_governor(r).Resume(); });
  return nullptr;
}

// setMemoryLevel(level) -> Promise<{level, models, kvReleased, unloaded}>, settled once every
// model's worker has applied the policy above.
napi_value SetMemoryLevelJs(napi_env env, napi_callback_info info) {
  int32_t level = 0;
  if (!read_level(env, info, 0, 2, "memory level", &level)) return nullptr;
  g_memory_level = level;
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  struct Tally {
    std::atomic<int32_t> pending{0}, released{0}, unloaded{0};
    int32_t models = 0;
  };
  auto tally = std::make_shared<Tally>();
  const auto models = live_models(env);
  tally->models = static_cast<int32_t>(models.size());
  tally->pending = tally->models + 1;  // + this call's own share, released below
  Channel* ch = Channel::Create(env, nullptr, "edgellm.setMemoryLevel");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  auto finish = [ch, tally, level, d = p.deferred] {
    if (tally->pending.fetch_sub(1) != 1) return;
    ch->Post([tally, level, d](napi_env env, napi_value) {
      napi_value o = make_object(env);
      set(env, o, "level", static_cast<double>(level));
      set(env, o, "models", static_cast<double>(tally->models));
      set(env, o, "kvReleased", static_cast<double>(tally->released.load()));
      set(env, o, "unloaded", static_cast<double>(tally->unloaded.load()));
      napi_resolve_deferred(env, d, o);
    });
    ch->Release();
  };
  if (level >= 1)
    for_each_runtime(env, [](const std::shared_ptr<RuntimeState>& r) { release_runtime_kv(r); });
  for (const auto& m : models) {
    if (level == 0 || m->closed) {
      finish();
      continue;
    }
    m->worker->Post([m, level, tally, finish] {
      if (m->session && !m->closed) {
        if (level >= 2 && m->Unload()) {
          ++tally->unloaded;
        } else if (m->session) {
          m->session->ReleaseKv();
          ++tally->released;
        }
      }
      finish();
    });
  }
  // live_models() holds no disposed model and dispose() runs on this thread, so every job
  // above reaches a worker that runs it. This call's own share comes last.
  start_thread(finish);
  return p.promise;
}

// signals() -> {thermalLevel, memoryLevel, paused}: what the app last said (-1: never).
napi_value SignalsJs(napi_env env, napi_callback_info) {
  napi_value o = make_object(env);
  set(env, o, "thermalLevel", static_cast<double>(g_thermal_level.load()));
  set(env, o, "memoryLevel", static_cast<double>(g_memory_level.load()));
  set(env, o, "paused", g_paused.load());
  return o;
}

}  // namespace

void apply_signals(PowerGovernor& governor) {
  (void)governor.SetThermalLevel(g_thermal_level.load());  // -1..6, checked on entry
  if (g_paused.load()) governor.Pause();
}

bool define_signals(napi_env env, napi_value exports) {
  const napi_property_descriptor fns[] = {
      {"setThermalLevel", nullptr, SetThermalLevelJs, nullptr, nullptr, nullptr, napi_default,
       nullptr},
      {"setMemoryLevel", nullptr, SetMemoryLevelJs, nullptr, nullptr, nullptr, napi_default,
       nullptr},
      {"pause", nullptr, PauseJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"resume", nullptr, ResumeJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"signals", nullptr, SignalsJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  return napi_define_properties(env, exports, sizeof(fns) / sizeof(fns[0]), fns) == napi_ok;
}

// ---- ModelState: memory pressure on the worker ----

bool ModelState::Unload() {
  if (!session) return false;
  for (const auto& [id, conv] : conversations) parked[id] = {conv->options(), conv->history()};
  conversations.clear();
  {
    std::lock_guard<std::mutex> lock(mu);
    session_for_cancel = nullptr;
  }
  session.reset();
  for (auto& [id, l] : loras) l.adapter.reset();  // reloaded with the model
  model.reset();
  draft.reset();
  session_options.draft_model = nullptr;
  unloaded = true;
  ReturnFreedMemory();  // see Close(): the worker's arena would keep the freed heap
  return true;
}

// Conversations parked by Unload(), recreated on the reloaded session. One that cannot be
// recreated stays parked (its history intact) and the next request tries again.
static Status restore_parked(ModelState& s) {
  Status first;
  for (auto it = s.parked.begin(); it != s.parked.end();) {
    auto c = Conversation::Create(*s.session, it->second.options);
    Status st = c.ok() ? (*c)->SetHistory(it->second.history) : c.status();
    if (!st.ok()) {
      if (first.ok()) first = st;
      ++it;
      continue;
    }
    s.conversations[it->first] = std::move(*c);
    it = s.parked.erase(it);
  }
  return first;
}

Status ModelState::EnsureLoaded() {
  if (session) return parked.empty() ? Status::Ok() : restore_parked(*this);
  if (!unloaded) return Status::FailedPrecondition("no model is loaded: call load() first");
  auto m = Model::Load(path, load_options);
  if (!m.ok()) {
    return Status(m.status().code(),
                  "reloading the model after memory pressure unloaded it: " + m.status().message());
  }
  std::unique_ptr<Model> d;
  if (!draft_path.empty()) {
    auto dm = Model::Load(draft_path, LoadOptions{});
    if (!dm.ok()) {
      return Status(dm.status().code(), "reloading the draft model after memory pressure "
                                        "unloaded it: " + dm.status().message());
    }
    d = std::move(*dm);
  }
  SessionOptions so = session_options;
  so.draft_model = d.get();
  auto s = Session::Create(**m, so);
  if (!s.ok()) return s.status();
  // Adapters belong to the model: they are committed with it, or dropped before it on failure
  // (locals are destroyed in reverse order: adapters, session, model).
  std::map<int64_t, std::shared_ptr<LoraAdapter>> adapters;
  for (const auto& [id, l] : loras) {
    auto a = LoraAdapter::Load(**m, l.path);
    if (!a.ok()) return a.status();
    adapters[id] = std::move(*a);
  }
  for (const auto& [id, scale] : applied_loras) {
    if (Status st = (*s)->SetLora(adapters[id], scale); !st.ok()) return st;
  }
  for (auto& [id, l] : loras) l.adapter = std::move(adapters[id]);
  model = std::move(*m);
  draft = std::move(d);
  session_options.draft_model = draft.get();
  session = std::move(*s);
  unloaded = false;
  ++reloads;
  {
    std::lock_guard<std::mutex> lock(mu);
    session_for_cancel = session.get();
  }
  return restore_parked(*this);
}

}  // namespace edgellm::node
