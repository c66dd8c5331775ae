// `edgellm serve`'s embedding routes: POST /v1/embeddings (OpenAI's shape: a string, strings,
// token ids or arrays of them; encoding_format float or base64; usage.prompt_tokens) and
// POST /v1/rerank and /rerank (llama-server's shape: query, documents, top_n,
// return_documents). Every bound is checked before any work starts: a breach is a 400 in the
// OpenAI error shape.
#pragma once

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "edgellm/edgellm.h"
#include "serve_queue.h"

namespace cli {

class EmbedRoutes {
 public:
  // `max_inputs`: inputs (or documents) per request. Every call into the embedder runs on
  // `engine` (serve_queue.h).
  EmbedRoutes(std::unique_ptr<edgellm::Embedder> embedder, std::string id, int max_inputs,
              EngineThread* engine)
      : embedder_(std::move(embedder)), id_(std::move(id)), max_inputs_(max_inputs),
        engine_(engine) {}
  void Routes(httplib::Server& s);
  // This model's entry in /v1/models.
  nlohmann::json ModelEntry(int64_t created) const;
  const std::string& id() const { return id_; }
  // "embeddings" or "rerank": the route this model answers.
  const char* kind() const { return embedder_->info().can_rerank ? "rerank" : "embeddings"; }

 private:
  void Embeddings(const httplib::Request& req, httplib::Response& res);
  void Rerank(const httplib::Request& req, httplib::Response& res);

  std::unique_ptr<edgellm::Embedder> embedder_;
  std::string id_;
  int max_inputs_;
  EngineThread* engine_;
};

}  // namespace cli
