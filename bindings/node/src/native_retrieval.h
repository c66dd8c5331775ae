// The retrieval classes of the addon: NativeEmbedder (native_embedder.cc: embeddings and rerank)
// and NativeIndex (native_index.cc: a DocumentIndex in a folder). Each object has its own Worker
// thread; the JS thread only reads arguments, posts jobs and receives closures through Channels.
// Contract: index.d.ts; design: docs/node.md "Documents".
//
// Lifetimes: an Embedder is held by shared_ptr, by its NativeEmbedder and by every NativeIndex
// opened with it (a DocumentIndex needs its embedder for its whole life), and a search job holds
// its reranker's for the job. dispose() of an embedder an index still uses ends the embedder's
// own calls; its memory goes when the last index using it closes.
#pragma once

#include "napi.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <set>

#include "edgellm/embed.h"
#include "edgellm/status.h"
#include "native_object.h"

namespace edgellm::node {

struct EmbedderState : NativeObject {
  std::atomic<bool> load_cancel{false};

  // Any thread: the embedder, or null before load() and after dispose().
  std::shared_ptr<Embedder> Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return embedder_;
  }
  void Set(std::shared_ptr<Embedder> e) {
    std::lock_guard<std::mutex> lock(mu_);
    embedder_ = std::move(e);
  }

 protected:
  void Cancel() override { load_cancel = true; }
  void Free() override;

 private:
  std::mutex mu_;
  std::shared_ptr<Embedder> embedder_;
};

// The state behind a NativeEmbedder object; nullptr (nothing thrown) when `v` is not one.
std::shared_ptr<EmbedderState> embedder_state_of(napi_env env, napi_value v);

// Class constructors, or nullptr with an exception pending.
napi_value define_native_embedder(napi_env env);
napi_value define_native_index(napi_env env);

// Teardown of every live embedder and index of `env` (nullptr: of every environment):
// cancels their calls and frees them on their workers.
void close_all_embedders(napi_env env);
void close_all_indexes(napi_env env);

}  // namespace edgellm::node
