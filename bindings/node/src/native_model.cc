// NativeModel: the JS class behind bindings/node/index.js's Model. One Worker thread per
// object loads the model, creates the session, generates and finally frees both; the JS thread
// only parses options, posts jobs and receives closures through Channels. Contract: index.d.ts;
// design: docs/node.md.
#include "native_model.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "model_state.h"
#include "native_conversation.h"
#include "native_lora.h"
#include "signals.h"
#include "media_js.h"
#include "spec_js.h"
#include "napi_util.h"
#include "worker.h"

namespace edgellm::node {
namespace {

using Clock = std::chrono::steady_clock;

double us_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// What load() resolves with, copied on the worker.
struct Loaded {
  ModelInfo mi;
  int32_t ctx = 0, threads = 0, batch = 0;
  double warmup_ms = 0;
};

// Every live model, so the environment's cleanup can stop them all.
std::mutex g_models_mu;
std::set<std::shared_ptr<ModelState>>* g_models = new std::set<std::shared_ptr<ModelState>>();

void finalize_wrapper(napi_env, void* data, void*) {
  auto* w = static_cast<Wrapper*>(data);
  auto state = w->state;
  delete w;
  {
    std::lock_guard<std::mutex> lock(g_models_mu);
    g_models->erase(state);
  }
  state->Close(state, nullptr);  // garbage-collected without dispose(): free on the worker
}

napi_value New(napi_env env, napi_callback_info info) {
  napi_value self = nullptr;
  NAPI_OK(env, napi_get_cb_info(env, info, nullptr, nullptr, &self, nullptr));
  auto* w = new Wrapper{std::make_shared<ModelState>()};
  w->state->env = env;
  apply_signals(w->state->governor);
  w->state->worker = Worker::Start();
  if (napi_wrap(env, self, w, finalize_wrapper, nullptr, nullptr) != napi_ok) {
    w->state->Close(w->state, nullptr);
    delete w;
    throw_last_error(env, "napi_wrap");
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(g_models_mu);
  g_models->insert(w->state);
  return self;
}

napi_value info_object(napi_env env, const Loaded& l) {
  const ModelInfo& mi = l.mi;
  napi_value o = make_object(env);
  set(env, o, "path", mi.path);
  set(env, o, "arch", mi.arch);
  set(env, o, "name", mi.name);
  set(env, o, "description", mi.description);
  set(env, o, "quant", mi.quant);
  set(env, o, "nParams", static_cast<double>(mi.n_params));
  set(env, o, "weightsBytes", static_cast<double>(mi.weights_bytes));
  set(env, o, "fileBytes", static_cast<double>(mi.file_bytes));
  set(env, o, "nLayer", static_cast<double>(mi.n_layer));
  set(env, o, "nEmbd", static_cast<double>(mi.n_embd));
  set(env, o, "nHead", static_cast<double>(mi.n_head));
  set(env, o, "nHeadKv", static_cast<double>(mi.n_head_kv));
  set(env, o, "nCtxTrain", static_cast<double>(mi.n_ctx_train));
  set(env, o, "nVocab", static_cast<double>(mi.n_vocab));
  set(env, o, "hasChatTemplate", mi.has_chat_template);
  set(env, o, "loadMode", load_mode_name(mi.load_mode));
  set(env, o, "loadMs", mi.load_ms);
  set_media_info(env, o, mi);
  set(env, o, "ctx", static_cast<double>(l.ctx));
  set(env, o, "threads", static_cast<double>(l.threads));
  set(env, o, "batch", static_cast<double>(l.batch));
  set(env, o, "warmupMs", l.warmup_ms);
  return o;
}

// load(path, {threads, ctx, batch, loadMode, warmup, mmprojPath, imageMaxTokens, draftPath},
//      onProgress?)
//   -> Promise<info>
napi_value Load(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value argv[3] = {};
  auto state = unwrap(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string path, mode = "auto", draft_path;
  if (!get_string(env, argv[0], "path", &path)) return nullptr;
  LoadOptions lo;
  SessionOptions so;
  if (!opt_int(env, argv[1], "threads", &so.n_threads) ||
      !opt_int(env, argv[1], "ctx", &so.n_ctx) || !opt_int(env, argv[1], "batch", &so.n_batch) ||
      !opt_bool(env, argv[1], "warmup", &so.warmup) ||
      !opt_string(env, argv[1], "loadMode", &mode) ||
      !opt_string(env, argv[1], "mmprojPath", &lo.mmproj_path) ||
      !opt_int(env, argv[1], "imageMaxTokens", &lo.image_max_tokens) ||
      !opt_string(env, argv[1], "draftPath", &draft_path)) {
    return nullptr;
  }
  if (!read_load_mode(env, mode, &lo.mode)) return nullptr;
  if (state->closed) return throw_status(env, Status::FailedPrecondition("the model is disposed"));
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, argv[2], "edgellm.load");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  state->worker->Post([state, ch, d = p.deferred, path, lo, so, draft_path]() mutable {
    auto progress = [ch](const char* stage, double v) {
      ch->Post([stage, v](napi_env env, napi_value cb) {
        if (!cb) return;
        napi_value o = make_object(env);
        set(env, o, "stage", stage);
        set(env, o, "progress", v);
        napi_value undefined = nullptr;
        napi_get_undefined(env, &undefined);
        napi_call_function(env, undefined, cb, 1, &o, nullptr);
      });
    };
    double last = -1;
    lo.on_progress = [&](float f) {
      if (f - last >= 0.01 || f >= 1.0f) {
        last = f;
        progress("loading", f);
      }
      return !state->load_cancel.load();
    };
    Status st;
    Loaded loaded;
    if (state->model) {
      st = Status::FailedPrecondition("this model object is already loaded");
    } else {
      auto m = Model::Load(path, lo);
      if (m.ok() && state->load_cancel) m = Status::Cancelled("load cancelled");
      std::unique_ptr<Model> draft;
      if (m.ok() && !draft_path.empty()) {
        auto dm = Model::Load(draft_path, LoadOptions{});
        if (dm.ok()) {
          draft = std::move(*dm);
        } else {
          m = Status(dm.status().code(), "draft model: " + dm.status().message());
        }
      }
      so.draft_model = draft.get();
      if (m.ok()) {
        progress("warming up", 1.0);
        auto s = Session::Create(**m, so);
        if (s.ok() && state->load_cancel) s = Status::Cancelled("load cancelled");
        if (s.ok()) {
          loaded = {(*m)->info(), (*s)->n_ctx(), (*s)->n_threads(), (*s)->n_batch(),
                    (*s)->warmup_ms()};
          state->model = std::move(*m);
          state->draft = std::move(draft);
          state->session = std::move(*s);
          state->path = path;
          state->draft_path = draft_path;
          state->load_options = lo;
          state->load_options.on_progress = nullptr;  // it points into this job
          state->session_options = so;
          state->session_options.warmup = false;  // a reload serves a request at once
          std::lock_guard<std::mutex> lock(state->mu);
          state->session_for_cancel = state->session.get();
        } else {
          st = s.status();
        }
      } else {
        st = m.status();
      }
    }
    ch->Post([d, st, loaded = std::move(loaded)](napi_env env, napi_value) {
      if (!st.ok()) {
        napi_reject_deferred(env, d, make_error(env, st));
      } else {
        napi_resolve_deferred(env, d, info_object(env, loaded));
      }
    });
    ch->Release();
  });
  return p.promise;
}

// generate(prompt, options, onBatch?) -> Promise<{text, finishReason, stats}>
napi_value GenerateJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value argv[3] = {};
  auto state = unwrap(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string prompt;
  GenerateOptions go;
  if (!get_string(env, argv[0], "prompt", &prompt) || !parse_generate_options(env, argv[1], &go)) {
    return nullptr;
  }
  return start_generation(env, state, argv[2], std::move(go),
                          [prompt = std::move(prompt)](ModelState& s, GenerateOptions& o,
                                                       const TextSink& sink) {
                            return s.session->Generate(prompt, o, sink);
                          });
}

// cancel(): stops the load or generation in flight (and a generation not yet started).
napi_value CancelJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = unwrap(env, cbinfo, &argc, nullptr);
  if (!state) return nullptr;
  state->CancelAll();
  return nullptr;
}

// Posts a job that resolves a promise with undefined after `fn` ran on the worker; `close`
// makes it the worker's last job (dispose).
napi_value settle_after(napi_env env, const std::shared_ptr<ModelState>& state, bool close,
                        std::function<void(ModelState&)> fn) {
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, nullptr, close ? "edgellm.dispose" : "edgellm.job");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  auto job = [state, ch, d = p.deferred, fn = std::move(fn)] {
    if (fn) fn(*state);
    ch->Post([d](napi_env env, napi_value) {
      napi_value undefined = nullptr;
      napi_get_undefined(env, &undefined);
      napi_resolve_deferred(env, d, undefined);
    });
    ch->Release();
  };
  if (close) {
    {
      std::lock_guard<std::mutex> lock(g_models_mu);
      g_models->erase(state);
    }
    if (!state->Close(state, job)) job();  // disposed before: nothing left to wait for
  } else if (state->closed) {
    job();
  } else {
    state->worker->Post(job);
  }
  return p.promise;
}

napi_value ReleaseKvJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = unwrap(env, cbinfo, &argc, nullptr);
  if (!state) return nullptr;
  return settle_after(env, state, false, [](ModelState& s) {
    if (s.session) s.session->ReleaseKv();
  });
}

napi_value DisposeJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = unwrap(env, cbinfo, &argc, nullptr);
  if (!state) return nullptr;
  return settle_after(env, state, true, nullptr);
}

}  // namespace

std::shared_ptr<ModelState> unwrap(napi_env env, napi_callback_info info, size_t* argc,
                                   napi_value* argv) {
  napi_value self = nullptr;
  if (napi_get_cb_info(env, info, argc, argv, &self, nullptr) != napi_ok) return nullptr;
  void* data = nullptr;
  if (napi_unwrap(env, self, &data) != napi_ok || !data) {
    napi_throw_type_error(env, "ERR_INVALID_THIS", "not a NativeModel");
    return nullptr;
  }
  return static_cast<Wrapper*>(data)->state;
}

bool parse_generate_options(napi_env env, napi_value o, GenerateOptions* go) {
  double seed = -1;
  if (!opt_int(env, o, "maxTokens", &go->max_tokens) || !opt_int(env, o, "topK", &go->top_k) ||
      !opt_bool(env, o, "chat", &go->chat) ||
      !opt_string(env, o, "systemPrompt", &go->system_prompt) ||
      !opt_strings(env, o, "stop", &go->stop) ||
      !opt_int(env, o, "batchTokens", &go->stream_every_tokens) ||
      !opt_int(env, o, "batchMs", &go->stream_every_ms) ||
      !opt_bool(env, o, "ignoreEos", &go->ignore_eos) || !opt_number(env, o, "seed", &seed) ||
      !opt_bool(env, o, "reusePrefix", &go->reuse_prefix) ||
      !opt_string(env, o, "grammar", &go->grammar) ||
      !opt_string(env, o, "jsonSchema", &go->json_schema) ||
      !opt_string(env, o, "toolChoice", &go->tool_choice) ||
      !opt_bool(env, o, "parallelToolCalls", &go->parallel_tool_calls) ||
      !read_media(env, o, &go->media) || !read_speculative(env, o, &go->speculative)) {
    return false;
  }
  // tools: [{name, description, parameters (JSON text)}] (index.js normalizes OpenAI's shape).
  if (auto tools = get_prop(env, o, "tools")) {
    bool is_array = false;
    napi_is_array(env, *tools, &is_array);
    if (!is_array) {
      napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", "tools must be an array");
      return false;
    }
    uint32_t n = 0;
    napi_get_array_length(env, *tools, &n);
    for (uint32_t i = 0; i < n; ++i) {
      napi_value t = nullptr;
      napi_get_element(env, *tools, i, &t);
      ToolSpec spec;
      if (!opt_string(env, t, "name", &spec.name) ||
          !opt_string(env, t, "description", &spec.description) ||
          !opt_string(env, t, "parameters", &spec.parameters)) {
        return false;
      }
      go->tools.push_back(std::move(spec));
    }
  }
  std::string reasoning;
  if (!opt_string(env, o, "reasoning", &reasoning)) return false;
  if (reasoning == "hide") {
    go->reasoning = Reasoning::kHide;
  } else if (reasoning == "inline") {
    go->reasoning = Reasoning::kInline;
  } else if (!reasoning.empty() && reasoning != "separate") {
    napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE",
                          "reasoning must be \"separate\", \"hide\" or \"inline\"");
    return false;
  }
  std::string whitespace;
  if (!opt_string(env, o, "jsonWhitespace", &whitespace)) return false;
  if (!whitespace.empty() && !parse_json_whitespace(whitespace, &go->json_whitespace)) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_VALUE",
                          "jsonWhitespace must be \"compact\", \"none\" or \"free\"");
    return false;
  }
  // history: earlier turns for a stateless chat, whose prefix the session's cache keeps.
  if (auto h = get_prop(env, o, "history")) {
    if (!read_messages(env, *h, &go->history)) return false;
    go->chat = true;
    go->reuse_prefix = true;
  }
  double t = go->temperature, tp = go->top_p, mp = go->min_p, rp = go->repeat_penalty;
  if (!opt_number(env, o, "temperature", &t) || !opt_number(env, o, "topP", &tp) ||
      !opt_number(env, o, "minP", &mp) || !opt_number(env, o, "repeatPenalty", &rp)) {
    return false;
  }
  go->temperature = static_cast<float>(t);
  go->top_p = static_cast<float>(tp);
  go->min_p = static_cast<float>(mp);
  go->repeat_penalty = static_cast<float>(rp);
  if (seed >= 0 && seed < 4294967295.0) go->seed = static_cast<uint32_t>(seed);
  return true;
}

static double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

napi_value tool_calls_array(napi_env env, const std::vector<ToolCall>& calls) {
  napi_value arr = nullptr;
  napi_create_array_with_length(env, calls.size(), &arr);
  for (size_t i = 0; i < calls.size(); ++i) {
    napi_value c = make_object(env);
    set(env, c, "id", calls[i].id);
    set(env, c, "name", calls[i].name);
    set(env, c, "arguments", calls[i].arguments);
    set(env, c, "args", parse_json(env, calls[i].arguments));
    napi_set_element(env, arr, static_cast<uint32_t>(i), c);
  }
  return arr;
}

napi_value result_object(napi_env env, const Generation& g, double queued_ms,
                         const Delivery& dl) {
  napi_value o = make_object(env);
  set(env, o, "text", g.text);
  set(env, o, "finishReason", finish_reason_name(g.finish_reason));
  if (!g.reasoning.empty()) set(env, o, "reasoning", g.reasoning);
  if (!g.tool_calls.empty()) set(env, o, "toolCalls", tool_calls_array(env, g.tool_calls));
  if (g.json_state != JsonState::kNone) {
    set(env, o, "jsonState", json_state_name(g.json_state));
    if (g.json_state == JsonState::kComplete) set(env, o, "json", parse_json(env, g.json));
  }
  const Stats& s = g.stats;
  napi_value st = make_object(env);
  set(env, st, "nPrompt", static_cast<double>(s.n_prompt));
  set(env, st, "nCached", static_cast<double>(s.n_cached));
  set(env, st, "turnsDropped", static_cast<double>(s.turns_dropped));
  set(env, st, "tokensDropped", static_cast<double>(s.tokens_dropped));
  set(env, st, "prefillMs", s.prefill_ms);
  set(env, st, "prefillTps", s.prefill_tps);
  set(env, st, "ttftMs", s.ttft_ms);
  set(env, st, "nGen", static_cast<double>(s.n_gen));
  set(env, st, "decodeMs", s.decode_ms);
  set(env, st, "decodeTps", s.decode_tps);
  set(env, st, "peakRssBytes", static_cast<double>(s.peak_rss_bytes));
  set(env, st, "threads", static_cast<double>(s.n_threads));
  set(env, st, "ctx", static_cast<double>(s.n_ctx));
  set(env, st, "grammarMs", s.grammar_ms);
  set(env, st, "grammarResamples", static_cast<double>(s.grammar_resamples));
  set(env, st, "batches", static_cast<double>(dl.latency_us.size()));
  set(env, st, "deliveryP50Us", percentile(dl.latency_us, 0.50));
  set(env, st, "deliveryP99Us", percentile(dl.latency_us, 0.99));
  set(env, st, "queuedMs", queued_ms);
  set(env, st, "threadChanges", static_cast<double>(s.thread_changes));
  set(env, st, "minThreads", static_cast<double>(s.min_threads));
  set(env, st, "pausedMs", s.paused_ms);
  set_media_stats(env, st, s);
  set_spec_stats(env, st, s);
  set(env, o, "stats", st);
  return o;
}

napi_value start_generation(napi_env env, const std::shared_ptr<ModelState>& state,
                            napi_value on_batch, GenerateOptions go, GenerationCall call,
                            std::function<Decorate(ModelState& state)> after) {
  const auto called = Clock::now();
  if (state->closed) return throw_status(env, Status::FailedPrecondition("the model is disposed"));
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, on_batch, "edgellm.generate");
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  auto cancel = std::make_shared<std::atomic<bool>>(false);
  {
    std::lock_guard<std::mutex> lock(state->mu);
    state->current = cancel;
  }
  auto dl = std::make_shared<Delivery>();
  state->worker->Post([state, ch, d = p.deferred, go, cancel, dl, called, call = std::move(call),
                       after = std::move(after)]() mutable {
    const double queued_ms = us_between(called, Clock::now()) / 1000.0;
    Result<Generation> r = Generation{};
    Decorate decorate;
    const int32_t reloads_before = state->reloads;
    if (Status ready = state->EnsureLoaded(); !ready.ok()) {
      r = ready;
    } else if (cancel->load() || state->closed) {
      r->finish_reason = FinishReason::kCancelled;
    } else {
      go.on_prefill = [cancel](int32_t, int32_t) { return !cancel->load(); };
      go.governor = &state->governor;  // the app's thermal level and pause (signals.cc)
      std::atomic<int32_t> n_gen{0};
      go.n_gen_out = &n_gen;
      int index = 0;
      int32_t tokens_before = 0;
      auto post = [&](std::string_view piece, bool reasoning) {
        const auto sent = Clock::now();
        const int32_t total = n_gen.load();
        const int32_t tokens = total - tokens_before;
        tokens_before = total;
        const bool open = ch->Post([text = std::string(piece), sent, i = index++, tokens, total,
                                    dl, reasoning](napi_env env, napi_value cb) {
          const double latency = us_between(sent, Clock::now());
          dl->latency_us.push_back(latency);
          if (!cb) return;
          napi_value args[2] = {make_string(env, text), make_object(env)};
          set(env, args[1], "index", static_cast<double>(i));
          set(env, args[1], "latencyUs", latency);
          set(env, args[1], "tokens", static_cast<double>(tokens));
          set(env, args[1], "totalTokens", static_cast<double>(total));
          if (reasoning) set(env, args[1], "reasoning", true);
          napi_value undefined = nullptr;
          napi_get_undefined(env, &undefined);
          napi_call_function(env, undefined, cb, 2, args, nullptr);
          // An exception from the callback is the JS layer's to handle; never leave it pending.
          bool pending = false;
          napi_is_exception_pending(env, &pending);
          if (pending) {
            napi_value ignored = nullptr;
            napi_get_and_clear_last_exception(env, &ignored);
          }
        });
        return open && !cancel->load();
      };
      auto sink = [&](std::string_view piece) { return post(piece, false); };
      // A reasoning model's thinking: the same channel, marked (index.js: onReasoning).
      go.reasoning_sink = [&](std::string_view piece) { return post(piece, true); };
      r = call(*state, go, sink);
      if (after) decorate = after(*state);
    }
    const bool reloaded = state->reloads != reloads_before;
    ch->Post([d, r = std::move(r), queued_ms, dl, reloaded, decorate = std::move(decorate)](
                 napi_env env, napi_value) mutable {
      if (!r.ok()) {
        napi_reject_deferred(env, d, make_error(env, r.status()));
      } else {
        napi_value out = result_object(env, *r, queued_ms, *dl);
        napi_value stats = nullptr;
        if (napi_get_named_property(env, out, "stats", &stats) == napi_ok) {
          set(env, stats, "reloaded", reloaded);
        }
        if (decorate) decorate(env, out);
        napi_resolve_deferred(env, d, out);
      }
    });
    ch->Release();
  });
  return p.promise;
}

napi_value start_job(napi_env env, const std::shared_ptr<ModelState>& state, const char* name,
                     std::function<JobResult(ModelState& state)> job) {
  if (state->closed) return throw_status(env, Status::FailedPrecondition("the model is disposed"));
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, nullptr, name);
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  state->worker->Post([state, ch, d = p.deferred, job = std::move(job)] {
    Status ready = state->EnsureLoaded();
    JobResult r = ready.ok() ? job(*state) : JobResult{ready, nullptr};
    ch->Post([d, r = std::move(r)](napi_env env, napi_value) {
      if (!r.first.ok()) {
        napi_reject_deferred(env, d, make_error(env, r.first));
        return;
      }
      napi_value v = nullptr;
      if (r.second) v = r.second(env);
      if (!v) napi_get_undefined(env, &v);
      napi_resolve_deferred(env, d, v);
    });
    ch->Release();
  });
  return p.promise;
}

napi_value define_native_model(napi_env env) {
  std::vector<napi_property_descriptor> methods = {
      {"load", nullptr, Load, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"generate", nullptr, GenerateJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"cancel", nullptr, CancelJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"releaseKv", nullptr, ReleaseKvJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"dispose", nullptr, DisposeJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  for (const napi_property_descriptor& d : conversation_methods()) methods.push_back(d);
  for (const napi_property_descriptor& d : lora_methods()) methods.push_back(d);
  napi_value cls = nullptr;
  if (napi_define_class(env, "NativeModel", NAPI_AUTO_LENGTH, New, nullptr,
                        methods.size(), methods.data(), &cls) != napi_ok) {
    return nullptr;
  }
  return cls;
}

std::vector<std::shared_ptr<ModelState>> live_models(napi_env env) {
  std::lock_guard<std::mutex> lock(g_models_mu);
  std::vector<std::shared_ptr<ModelState>> out;
  for (const auto& m : *g_models) {
    if (m->env == env) out.push_back(m);
  }
  return out;
}

void close_all_models(napi_env env) {
  std::vector<std::shared_ptr<ModelState>> models;
  {
    std::lock_guard<std::mutex> lock(g_models_mu);
    for (auto it = g_models->begin(); it != g_models->end();) {
      if (env == nullptr || (*it)->env == env) {
        models.push_back(*it);
        it = g_models->erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& m : models) m->Close(m, nullptr);
}

}  // namespace edgellm::node
