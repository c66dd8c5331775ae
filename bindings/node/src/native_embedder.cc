// NativeEmbedder: the JS class behind index.js's Embedder (retrieval.js). load, embed, rerank and
// dispose run on the object's Worker; vectors come back as one Float32Array per text (typed
// arrays only: HarmonyOS has no Buffer). See native_retrieval.h.
#include "native_retrieval.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "edgellm/edgellm.h"
#include "functions.h"
#include "napi_util.h"
#include "retrieval_js.h"

namespace edgellm::node {

napi_value worker_job(napi_env env, Worker& worker, napi_value progress_cb, const char* name,
                      std::function<Settle(Channel*)> work) {
  Promise p;
  NAPI_OK(env, napi_create_promise(env, &p.deferred, &p.promise));
  Channel* ch = Channel::Create(env, progress_cb, name);
  if (!ch) return throw_status(env, Status::Internal("cannot create a threadsafe function"));
  worker.Post([ch, d = p.deferred, work = std::move(work)] {
    Settle settle = work(ch);
    ch->Post([d, settle = std::move(settle)](napi_env env, napi_value) { settle(env, d); });
    ch->Release();
  });
  return p.promise;
}

std::function<bool(int32_t, int32_t)> progress_to(Channel* ch, std::shared_ptr<std::atomic<bool>> flag,
                                                  const std::atomic<bool>* closed) {
  return [ch, flag = std::move(flag), closed](int32_t done, int32_t total) {
    ch->Post([done, total](napi_env env, napi_value cb) {
      if (!cb) return;
      napi_value o = make_object(env);
      set(env, o, "done", static_cast<double>(done));
      set(env, o, "total", static_cast<double>(total));
      call(env, cb, o);
    });
    return keep_going(*flag, *closed);
  };
}

namespace {

NativeClass* g_class = new NativeClass("NativeEmbedder", [] {
  return std::make_shared<EmbedderState>();
});

const Status kDisposed =
    Status::FailedPrecondition("the embedder is disposed; load it again with loadEmbedder()");

std::shared_ptr<EmbedderState> self_state(napi_env env, napi_callback_info info, size_t* argc,
                                          napi_value* argv) {
  return std::static_pointer_cast<EmbedderState>(g_class->This(env, info, argc, argv));
}

// load(path, {threads, pooling, maxTokens, batchTokens, batchTexts, queryPrefix,
//             documentPrefix, loadMode}, onProgress?) -> Promise<info>
napi_value LoadJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value argv[3] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string path, pooling = "model", mode = "auto";
  EmbedderOptions o;
  if (!get_string(env, argv[0], "path", &path) ||
      !opt_int(env, argv[1], "threads", &o.n_threads) ||
      !opt_int(env, argv[1], "maxTokens", &o.max_tokens) ||
      !opt_int(env, argv[1], "batchTokens", &o.batch_tokens) ||
      !opt_int(env, argv[1], "batchTexts", &o.batch_texts) ||
      !opt_string(env, argv[1], "queryPrefix", &o.query_prefix) ||
      !opt_string(env, argv[1], "documentPrefix", &o.document_prefix) ||
      !opt_string(env, argv[1], "pooling", &pooling) ||
      !opt_string(env, argv[1], "loadMode", &mode)) {
    return nullptr;
  }
  auto p = pooling_from_name(pooling);
  if (!p.ok()) return throw_status(env, p.status());
  o.pooling = *p;
  if (!read_load_mode(env, mode, &o.load.mode)) return nullptr;
  if (state->closed) return throw_status(env, kDisposed);
  return worker_job(env, *state->worker, argv[2], "edgellm.embedder.load",
                    [state, path, o](Channel* ch) mutable -> Settle {
    if (state->Get()) return reject_with(Status::FailedPrecondition("already loaded"));
    o.load.on_progress = [ch, state](float f) {
      ch->Post([f](napi_env env, napi_value cb) {
        if (!cb) return;
        napi_value v = make_object(env);
        set(env, v, "stage", "loading");
        set(env, v, "progress", static_cast<double>(f));
        call(env, cb, v);
      });
      return !state->load_cancel.load();
    };
    auto e = Embedder::Load(path, o);
    if (e.ok() && state->load_cancel) e = Status::Cancelled("load cancelled");
    if (!e.ok()) return reject_with(e.status());
    std::shared_ptr<Embedder> shared = std::move(*e);
    EmbedderInfo info = shared->info();
    state->Set(std::move(shared));
    return [info](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, embedder_info_object(env, info));
    };
  });
}

// embed(texts, {kind, normalize, truncate}, onProgress?, cancelHolder?) ->
//   Promise<{vectors: Float32Array[], nTokens, truncated, stats}>
napi_value EmbedJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 4;
  napi_value argv[4] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::vector<std::string> texts;
  std::string kind = "plain";
  EmbedOptions o;
  if (!get_strings(env, argv[0], "texts", &texts) || !opt_string(env, argv[1], "kind", &kind) ||
      !opt_bool(env, argv[1], "normalize", &o.normalize) ||
      !opt_bool(env, argv[1], "truncate", &o.truncate)) {
    return nullptr;
  }
  if (kind == "query") {
    o.kind = TextKind::kQuery;
  } else if (kind == "document") {
    o.kind = TextKind::kDocument;
  } else if (kind != "plain") {
    return throw_status(env, Status::InvalidArgument("kind '" + kind +
                                                     "' must be plain, query or document"));
  }
  if (state->closed) return throw_status(env, kDisposed);
  auto flag = state->calls.Begin();
  if (!attach_cancel(env, argv[3], flag)) return nullptr;
  return worker_job(env, *state->worker, argv[2], "edgellm.embed",
                    [state, texts = std::move(texts), o, flag](Channel* ch) mutable -> Settle {
    std::shared_ptr<Embedder> e = state->Get();
    Result<Embeddings> r = kDisposed;
    if (e && keep_going(*flag, state->closed)) {
      o.on_progress = progress_to(ch, flag, &state->closed);
      r = e->Embed(texts, o);
    } else if (e) {
      r = Status::Cancelled("embed cancelled");
    }
    state->calls.End(flag);
    if (!r.ok()) return reject_with(r.status());
    auto out = std::make_shared<Embeddings>(std::move(*r));
    return [out](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, embeddings_object(env, *out));
    };
  });
}

// rerank(query, documents, {truncate}, onProgress?, cancelHolder?) ->
//   Promise<{scores, probabilities, order, nTokens, stats}>
napi_value RerankJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 5;
  napi_value argv[5] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string query;
  std::vector<std::string> docs;
  RerankOptions o;
  if (!get_string(env, argv[0], "query", &query) ||
      !get_strings(env, argv[1], "documents", &docs) ||
      !opt_bool(env, argv[2], "truncate", &o.truncate)) {
    return nullptr;
  }
  if (state->closed) return throw_status(env, kDisposed);
  auto flag = state->calls.Begin();
  if (!attach_cancel(env, argv[4], flag)) return nullptr;
  return worker_job(env, *state->worker, argv[3], "edgellm.rerank",
                    [state, query, docs = std::move(docs), o, flag](Channel* ch) mutable -> Settle {
    std::shared_ptr<Embedder> e = state->Get();
    Result<RerankResult> r = kDisposed;
    if (e && keep_going(*flag, state->closed)) {
      o.on_progress = progress_to(ch, flag, &state->closed);
      r = e->Rerank(query, docs, o);
    } else if (e) {
      r = Status::Cancelled("rerank cancelled");
    }
    state->calls.End(flag);
    if (!r.ok()) return reject_with(r.status());
    auto out = std::make_shared<RerankResult>(std::move(*r));
    return [out](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, rerank_object(env, *out));
    };
  });
}

// cancel(): the load in progress.
napi_value CancelJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = self_state(env, cbinfo, &argc, nullptr);
  if (!state) return nullptr;
  state->load_cancel = true;
  return nullptr;
}

// dispose() -> Promise<void>: cancels running and queued calls, then frees the embedder (an
// index opened with it keeps it until the index closes).
napi_value DisposeJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = self_state(env, cbinfo, &argc, nullptr);
  return state ? g_class->Dispose(env, state) : nullptr;
}

}  // namespace

void EmbedderState::Free() {
  Set(nullptr);
  ReturnFreedMemory();  // each worker's allocations sit in their own malloc arena
}

std::shared_ptr<EmbedderState> embedder_state_of(napi_env env, napi_value v) {
  return std::static_pointer_cast<EmbedderState>(g_class->Of(env, v));
}

napi_value define_native_embedder(napi_env env) {
  const napi_property_descriptor methods[] = {
      {"load", nullptr, LoadJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"embed", nullptr, EmbedJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rerank", nullptr, RerankJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"cancel", nullptr, CancelJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"dispose", nullptr, DisposeJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  return g_class->Define(env, methods, sizeof(methods) / sizeof(methods[0]));
}

void close_all_embedders(napi_env env) { g_class->CloseAll(env); }

}  // namespace edgellm::node
