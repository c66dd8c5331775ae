// NativeIndex: the JS class behind retrieval.js's DocumentIndex. open, add, remove, search,
// ground, stats and close run on the object's Worker, one at a time (a DocumentIndex is used
// from one thread). See native_retrieval.h.
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "edgellm/edgellm.h"
#include "functions.h"
#include "napi_util.h"
#include "native_retrieval.h"
#include "retrieval_js.h"

namespace edgellm::node {
namespace {

struct IndexState : NativeObject {
  // Worker thread only. The index before its embedder: it must outlive the index.
  std::shared_ptr<Embedder> embedder;
  std::unique_ptr<DocumentIndex> index;

 protected:
  void Free() override {
    index.reset();
    embedder.reset();
  }
};

NativeClass* g_class = new NativeClass("NativeIndex", [] { return std::make_shared<IndexState>(); });

const Status kClosed = Status::FailedPrecondition("the index is closed; open it again");

std::shared_ptr<IndexState> self_state(napi_env env, napi_callback_info info, size_t* argc,
                                       napi_value* argv) {
  return std::static_pointer_cast<IndexState>(g_class->This(env, info, argc, argv));
}

// The loaded embedder behind a NativeEmbedder argument; null for null/undefined. False with
// an exception pending for anything else, or for an embedder disposed or not loaded.
bool embedder_arg(napi_env env, napi_value v, const char* what, std::shared_ptr<Embedder>* out) {
  if (!v || is_nullish(env, v)) return true;
  auto s = embedder_state_of(env, v);
  if (!s) {
    std::string msg = std::string(what) + " must be an Embedder from loadEmbedder()";
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg.c_str());
    return false;
  }
  *out = s->Get();
  if (!*out) {
    throw_status(env, Status::FailedPrecondition(std::string(what) + " is disposed"));
    return false;
  }
  return true;
}

// A job that needs the open index; `fn` runs on the worker with it.
template <typename Fn>
napi_value index_job(napi_env env, const std::shared_ptr<IndexState>& state, napi_value progress,
                     const char* name, Fn fn) {
  if (state->closed) return throw_status(env, kClosed);
  return worker_job(env, *state->worker, progress, name, [state, fn](Channel* ch) mutable -> Settle {
    if (!state->index) return reject_with(kClosed);
    return fn(*state->index, ch);
  });
}

// open(dir, embedder|null, {vectorType, chunkTokens, chunkOverlap, readOnly}) -> Promise<stats>
napi_value OpenJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 3;
  napi_value argv[3] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string dir, vtype;
  IndexOptions o;
  std::shared_ptr<Embedder> embedder;
  if (!get_string(env, argv[0], "dir", &dir) || !embedder_arg(env, argv[1], "embedder", &embedder) ||
      !opt_string(env, argv[2], "vectorType", &vtype) ||
      !opt_int(env, argv[2], "chunkTokens", &o.chunk_tokens) ||
      !opt_int(env, argv[2], "chunkOverlap", &o.chunk_overlap) ||
      !opt_bool(env, argv[2], "readOnly", &o.read_only)) {
    return nullptr;
  }
  if (!vtype.empty()) {
    auto t = vector_type_from_name(vtype);
    if (!t.ok()) return throw_status(env, t.status());
    o.vector_type = *t;
  }
  if (state->closed) return throw_status(env, kClosed);
  return worker_job(env, *state->worker, nullptr, "edgellm.index.open",
                    [state, dir, o, embedder](Channel*) -> Settle {
    if (state->index) return reject_with(Status::FailedPrecondition("already open"));
    auto idx = DocumentIndex::Open(dir, embedder.get(), o);
    if (!idx.ok()) return reject_with(idx.status());
    auto st = (*idx)->Stats();
    if (!st.ok()) return reject_with(st.status());
    state->embedder = embedder;
    state->index = std::move(*idx);
    return [s = std::move(*st)](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, index_stats_object(env, s));
    };
  });
}

// add(kind "text"|"file", sourceOrPath, text?, onProgress?, cancelHolder?) -> Promise<result>
napi_value AddJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 5;
  napi_value argv[5] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string kind, name, text;
  if (!get_string(env, argv[0], "kind", &kind) || !get_string(env, argv[1], "source", &name) ||
      (kind == "text" && !get_string(env, argv[2], "text", &text))) {
    return nullptr;
  }
  if (state->closed) return throw_status(env, kClosed);
  auto flag = state->calls.Begin();
  if (!attach_cancel(env, argv[4], flag)) return nullptr;
  return index_job(env, state, argv[3], "edgellm.index.add",
                   [state, kind, name, text, flag](DocumentIndex& index, Channel* ch) -> Settle {
    AddOptions o;
    o.on_progress = progress_to(ch, flag, &state->closed);
    auto r = kind == "text" ? index.AddText(name, text, o) : index.AddFile(name, o);
    state->calls.End(flag);
    if (!r.ok()) return reject_with(r.status());
    return [a = std::move(*r)](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, add_result_object(env, a));
    };
  });
}

// remove(source) -> Promise<number of chunks removed>
napi_value RemoveJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 1;
  napi_value argv[1] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string source;
  if (!get_string(env, argv[0], "source", &source)) return nullptr;
  return index_job(env, state, nullptr, "edgellm.index.remove",
                   [source](DocumentIndex& index, Channel*) -> Settle {
    auto r = index.Remove(source);
    if (!r.ok()) return reject_with(r.status());
    return [n = *r](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, make_number(env, n));
    };
  });
}

// search(query, {topK, mode, reranker, rerankTopN}) -> Promise<{hits, ms, chunksSearched}>
napi_value SearchJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value argv[2] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string query;
  SearchOptions o;
  std::shared_ptr<Embedder> reranker;
  if (!get_string(env, argv[0], "query", &query) || !read_search_options(env, argv[1], &o) ||
      !embedder_arg(env, get_prop(env, argv[1], "reranker").value_or(nullptr), "reranker",
                    &reranker)) {
    return nullptr;
  }
  return index_job(env, state, nullptr, "edgellm.index.search",
                   [query, o, reranker](DocumentIndex& index, Channel*) mutable -> Settle {
    o.reranker = reranker.get();
    auto r = index.Search(query, o);
    if (!r.ok()) return reject_with(r.status());
    return [res = std::move(*r)](napi_env env, napi_deferred d) {
      napi_value v = make_object(env);
      set(env, v, "hits", hits_array(env, res.hits));
      set(env, v, "ms", res.ms);
      set(env, v, "chunksSearched", static_cast<double>(res.chunks_searched));
      napi_resolve_deferred(env, d, v);
    };
  });
}

// ground(question, {topK, mode, reranker, rerankTopN, maxContextTokens, instruction}) ->
//   Promise<{prompt, cited, searchMs}>
napi_value GroundJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 2;
  napi_value argv[2] = {};
  auto state = self_state(env, cbinfo, &argc, argv);
  if (!state) return nullptr;
  std::string question;
  GroundOptions o;
  std::shared_ptr<Embedder> reranker;
  if (!get_string(env, argv[0], "question", &question) ||
      !read_search_options(env, argv[1], &o.search) ||
      !opt_int(env, argv[1], "maxContextTokens", &o.max_context_tokens) ||
      !opt_string(env, argv[1], "instruction", &o.instruction) ||
      !embedder_arg(env, get_prop(env, argv[1], "reranker").value_or(nullptr), "reranker",
                    &reranker)) {
    return nullptr;
  }
  return index_job(env, state, nullptr, "edgellm.index.ground",
                   [question, o, reranker](DocumentIndex& index, Channel*) mutable -> Settle {
    o.search.reranker = reranker.get();
    auto r = ground_question(index, question, o);
    if (!r.ok()) return reject_with(r.status());
    return [g = std::move(*r)](napi_env env, napi_deferred d) {
      napi_value v = make_object(env);
      set(env, v, "prompt", g.prompt);
      set(env, v, "cited", hits_array(env, g.cited));
      set(env, v, "searchMs", g.search_ms);
      napi_resolve_deferred(env, d, v);
    };
  });
}

// stats() -> Promise<stats>
napi_value StatsJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = self_state(env, cbinfo, &argc, nullptr);
  if (!state) return nullptr;
  return index_job(env, state, nullptr, "edgellm.index.stats",
                   [](DocumentIndex& index, Channel*) -> Settle {
    auto r = index.Stats();
    if (!r.ok()) return reject_with(r.status());
    return [s = std::move(*r)](napi_env env, napi_deferred d) {
      napi_resolve_deferred(env, d, index_stats_object(env, s));
    };
  });
}

// close() -> Promise<void>: cancels a running add (the index stays as it was), then closes.
napi_value CloseJs(napi_env env, napi_callback_info cbinfo) {
  size_t argc = 0;
  auto state = self_state(env, cbinfo, &argc, nullptr);
  return state ? g_class->Dispose(env, state) : nullptr;
}

}  // namespace

napi_value define_native_index(napi_env env) {
  const napi_property_descriptor methods[] = {
      {"open", nullptr, OpenJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"add", nullptr, AddJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"remove", nullptr, RemoveJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"search", nullptr, SearchJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"ground", nullptr, GroundJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"stats", nullptr, StatsJs, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"close", nullptr, CloseJs, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  return g_class->Define(env, methods, sizeof(methods) / sizeof(methods[0]));
}

void close_all_indexes(napi_env env) { g_class->CloseAll(env); }

}  // namespace edgellm::node
