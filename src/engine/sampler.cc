#include "engine/sampler.h"

#include <cmath>
#include <string>

namespace edgellm::engine {

Status validate_sampling(const GenerateOptions& o) {
  auto bad = [](const std::string& what) { return Status::InvalidArgument(what); };
  if (o.max_tokens < 1) {
    return bad("max_tokens is " + std::to_string(o.max_tokens) + ": ask for at least 1 token");
  }
  if (!std::isfinite(o.temperature) || o.temperature < 0) {
    return bad("temperature must be >= 0 (0 = greedy), got " + std::to_string(o.temperature));
  }
  if (o.top_k < 0) return bad("top_k must be >= 0 (0 = off), got " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    return bad("top_p must be in (0, 1] (1 = off), got " + std::to_string(o.top_p));
  }
  if (!(o.min_p >= 0 && o.min_p < 1)) {
    return bad("min_p must be in [0, 1) (0 = off), got " + std::to_string(o.min_p));
  }
  if (!(o.repeat_penalty > 0) || !std::isfinite(o.repeat_penalty)) {
    return bad("repeat_penalty must be > 0 (1 = off), got " + std::to_string(o.repeat_penalty));
  }
  if (o.repeat_last_n < 0) return bad("repeat_last_n must be >= 0");
  if (o.stream_every_tokens < 1) return bad("stream_every_tokens must be >= 1");
  if (o.stream_every_ms < 0) return bad("stream_every_ms must be >= 0");
  return Status::Ok();
}

TokenSampler::TokenSampler(const GenerateOptions& o, int32_t n_vocab) : n_vocab_(n_vocab) {
  const bool greedy = o.temperature <= 0 && (o.repeat_penalty == 1.0f || o.repeat_last_n == 0);
  if (!greedy) chain_ = make_sampler_chain(o, n_vocab);
}

llama_token TokenSampler::Sample(llama_context* ctx) {
  if (chain_) return llama_sampler_sample(chain_.get(), ctx, -1);
  const float* logits = llama_get_logits_ith(ctx, -1);
  int32_t best = 0;
  for (int32_t i = 1; i < n_vocab_; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

}  // namespace edgellm::engine
