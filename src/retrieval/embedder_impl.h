// Internals of Embedder shared by embedder.cc (load, Embed) and rerank.cc (Rerank).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "edgellm/embed.h"
#include "engine/llama_glue.h"
#include "llama.h"

namespace edgellm {

struct Embedder::Impl {
  std::unique_ptr<Model> owned;  // set by Embedder::Load
  const Model* model = nullptr;
  llama_model* lm = nullptr;
  const llama_vocab* vocab = nullptr;
  engine::ContextPtr ctx;
  EmbedderInfo info;
  int32_t n_threads = 1;
  std::mutex mu;  // one call at a time

  // One text's tokens, ready to decode.
  struct Item {
    std::vector<int32_t> tokens;
    bool truncated = false;
  };
  // Decodes `items` in packed batches; for each item calls take(index, pooled output).
  // Progress and cancel through `on_progress`; stats filled.
  Status Run(const std::vector<Item>& items,
             const std::function<bool(int32_t, int32_t)>& on_progress,
             const std::function<void(size_t, const float*)>& take, EmbedStats* stats);
  // Embeds tokenized items (length already checked or cut): vectors in input order.
  Result<Embeddings> EmbedItems(const std::vector<Item>& items, const EmbedOptions& options,
                                Embeddings out, std::chrono::steady_clock::time_point t0);
};

// Checks one input text: not empty, valid UTF-8, no NUL byte. `what` names it ("text 3").
Status check_text(const std::string& text, const std::string& what);
// Cuts `tokens` to `max_tokens`, keeping a closing special token the tokenizer added.
void truncate_tokens(const llama_vocab* vocab, int32_t max_tokens, std::vector<int32_t>* tokens);

}  // namespace edgellm
