// JS values of the retrieval types (retrieval_js.cc) and the job helpers NativeEmbedder and
// NativeIndex share (native_embedder.cc). JS thread unless a comment says otherwise.
#pragma once

#include "napi.h"

#include <atomic>
#include <functional>
#include <memory>

#include "edgellm/embed.h"
#include "edgellm/index.h"
#include "functions.h"
#include "napi_util.h"
#include "worker.h"

namespace edgellm::node {

napi_value embedder_info_object(napi_env env, const EmbedderInfo& info);
// {vectors: Float32Array[] (one ArrayBuffer each), nTokens, truncated, stats}
napi_value embeddings_object(napi_env env, const Embeddings& e);
napi_value rerank_object(napi_env env, const RerankResult& r);
napi_value hit_object(napi_env env, const SearchHit& h);
napi_value hits_array(napi_env env, const std::vector<SearchHit>& hits);
napi_value index_stats_object(napi_env env, const IndexStats& s);
napi_value add_result_object(napi_env env, const AddResult& a);

// `mode` ("vector", "lexical", "hybrid") and the numbers of a search options object; false
// with an exception pending.
bool read_search_options(napi_env env, napi_value o, SearchOptions* out);

// A job on `worker` that settles the returned promise: `work` runs there (it may post progress
// through the Channel, whose JS callback is `progress_cb`) and returns the settling closure.
napi_value worker_job(napi_env env, Worker& worker, napi_value progress_cb, const char* name,
                      std::function<Settle(Channel*)> work);
// Any thread: a progress callback for the library that posts {done, total} to the channel's
// JS callback and says to stop once `flag` or `closed` is set.
std::function<bool(int32_t, int32_t)> progress_to(Channel* ch,
                                                  std::shared_ptr<std::atomic<bool>> flag,
                                                  const std::atomic<bool>* closed);

}  // namespace edgellm::node
