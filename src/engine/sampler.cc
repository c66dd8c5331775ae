#include "engine/sampler.h"

#include <algorithm>
#include <array>
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
  const bool no_penalty = o.repeat_penalty == 1.0f || o.repeat_last_n == 0;
  const bool greedy = o.temperature <= 0 && no_penalty;
  if (!greedy) chain_ = make_sampler_chain(o, n_vocab);
  // The chain keeps at most top_k tokens, chosen by logit: the top_k highest allowed tokens
  // are all a constrained draw needs. A repetition penalty changes logits before top-k, and
  // top-k off needs the whole distribution: then every token is checked.
  if (greedy) {
    narrow_k_ = 1;
  } else if (no_penalty && o.top_k > 0) {
    narrow_k_ = static_cast<size_t>(o.top_k);
    if (o.min_p > 0) min_p_floor_ = std::log(o.min_p);
  }
}

void TokenSampler::FillAll(const float* logits) {
  cur_.resize(static_cast<size_t>(n_vocab_));
  for (int32_t i = 0; i < n_vocab_; ++i) cur_[i] = {i, logits[i], 0.0f};
}

llama_token TokenSampler::Pick(llama_token_data_array* arr) {
  if (arr->size == 0) return LLAMA_TOKEN_NULL;
  if (chain_) {
    llama_sampler_apply(chain_.get(), arr);
    if (arr->selected < 0 || static_cast<size_t>(arr->selected) >= arr->size) {
      return LLAMA_TOKEN_NULL;
    }
    return arr->data[arr->selected].id;
  }
  size_t best = 0;
  for (size_t i = 1; i < arr->size; ++i) {
    if (arr->data[i].logit > arr->data[best].logit) best = i;
  }
  return arr->data[best].id;
}

void TokenSampler::Candidates(const float* logits) {
  if (!index_) {
    FillAll(logits);
    return;
  }
  cur_.clear();
  // Which first bytes the grammar allows now: one check of each one-byte token.
  std::array<llama_token_data, 256> probe;
  std::array<uint8_t, 256> byte_of;
  size_t n_probe = 0;
  for (int b = 0; b < 256; ++b) {
    if (index_->one_byte[b] < 0) continue;
    byte_of[n_probe] = static_cast<uint8_t>(b);
    probe[n_probe++] = {index_->one_byte[b], 0.0f, 0.0f};
  }
  llama_token_data_array arr = {probe.data(), n_probe, -1, false};
  llama_sampler_apply(grammar_.get(), &arr);
  std::array<bool, 257> keep{};
  keep[256] = true;
  for (size_t i = 0; i < n_probe; ++i) {
    if (std::isfinite(probe[i].logit)) {
      keep[byte_of[i]] = true;
    }
  }
  for (int b = 0; b < 257; ++b) {
    if (!keep[b]) continue;
    for (llama_token t : index_->by_byte[b]) cur_.push_back({t, logits[t], 0.0f});
  }
}

llama_token TokenSampler::DrawNarrowed(const float* logits) {
  Candidates(logits);
  allowed_.clear();
  const auto higher = [](const llama_token_data& a, const llama_token_data& b) {
    return a.logit > b.logit;
  };
  // Chunks in descending logit order: every token after a chunk has a lower logit than every
  // token in it, so once narrow_k_ allowed tokens are found they include the top narrow_k_.
  // With min-p, tokens below (best allowed logit + log(min_p)) would be dropped by min-p:
  // the search stops at them.
  size_t done = 0, chunk = 256;
  float floor = -INFINITY;
  while (done < cur_.size() && allowed_.size() < narrow_k_) {
    const size_t end = std::min(cur_.size(), done + chunk);
    if (end < cur_.size()) {
      std::nth_element(cur_.begin() + static_cast<std::ptrdiff_t>(done),
                       cur_.begin() + static_cast<std::ptrdiff_t>(end), cur_.end(), higher);
    }
    float top = -INFINITY;
    for (size_t i = done; i < end; ++i) top = std::max(top, cur_[i].logit);
    if (top < floor) break;
    llama_token_data_array part = {cur_.data() + done, end - done, -1, false};
    llama_sampler_apply(grammar_.get(), &part);
    const bool first = allowed_.empty();
    for (size_t i = done; i < end; ++i) {
      if (std::isfinite(cur_[i].logit)) allowed_.push_back(cur_[i]);
    }
    // The first chunk with allowed tokens holds the best allowed one (chunks descend).
    if (first && !allowed_.empty() && min_p_floor_ < 0) {
      float best = -INFINITY;
      for (const auto& t : allowed_) best = std::max(best, t.logit);
      floor = best + min_p_floor_;
    }
    done = end;
    chunk *= 4;
  }
  llama_token_data_array arr = {allowed_.data(), allowed_.size(), -1, false};
  return Pick(&arr);
}

llama_token TokenSampler::Draw(const float* logits, bool with_grammar) {
  if (!with_grammar) {
    FillAll(logits);
    llama_token_data_array arr = {cur_.data(), cur_.size(), -1, false};
    return Pick(&arr);
  }
  Candidates(logits);
  llama_token_data_array arr = {cur_.data(), cur_.size(), -1, false};
  llama_sampler_apply(grammar_.get(), &arr);
  // Only what the grammar allows goes on to the chain (or the argmax).
  allowed_.clear();
  for (const llama_token_data& t : cur_) {
    if (std::isfinite(t.logit)) allowed_.push_back(t);
  }
  llama_token_data_array kept = {allowed_.data(), allowed_.size(), -1, false};
  return Pick(&kept);
}

Result<llama_token> TokenSampler::Sample(llama_context* ctx, int32_t idx) {
  if (chain_ && !grammar_) return llama_sampler_sample(chain_.get(), ctx, idx);
  const float* logits = llama_get_logits_ith(ctx, idx);
  if (!logits) return Status::Internal("no logits for output " + std::to_string(idx));
  llama_token tok = 0;
  if (chain_) {
    tok = Draw(logits, /*with_grammar=*/false);
  } else {
    for (int32_t i = 1; i < n_vocab_; ++i) {
      if (logits[i] > logits[tok]) tok = i;
    }
    if (!grammar_) return tok;
  }
  if (tok == LLAMA_TOKEN_NULL || !grammar_allows(grammar_.get(), tok)) {
    ++resamples_;
    tok = narrow_k_ > 0 ? DrawNarrowed(logits) : Draw(logits, /*with_grammar=*/true);
    if (tok == LLAMA_TOKEN_NULL) {
      return Status::InvalidArgument(
          "the grammar allows no token of the model's vocabulary here: it asks for text the "
          "vocabulary cannot spell, or for nothing more while end-of-text is not allowed");
    }
  }
  EDGELLM_RETURN_IF_ERROR(grammar_accept(grammar_.get(), tok));
  if (chain_) llama_sampler_accept(chain_.get(), tok);
  return tok;
}

Status TokenSampler::Accept(llama_token tok) {
  if (grammar_) EDGELLM_RETURN_IF_ERROR(grammar_accept(grammar_.get(), tok));
  if (chain_) llama_sampler_accept(chain_.get(), tok);
  return Status::Ok();
}

std::string TokenSampler::ForcedText(const llama_vocab* vocab, size_t max_bytes) {
  std::string out;
  if (!grammar_ || !index_ || max_bytes == 0) return out;
  // One check of the 256 one-byte tokens tells the bytes allowed next; one allowed (and no
  // end) forces it. A copy of the grammar walks on past each forced byte.
  SamplerPtr walk;
  llama_sampler* g = grammar_.get();
  llama_token eog = llama_vocab_eos(vocab);  // any end token: the grammar allows it iff it can end
  if (eog == LLAMA_TOKEN_NULL) eog = llama_vocab_eot(vocab);
  std::array<llama_token_data, 256> probe;
  std::array<uint8_t, 256> byte_of;
  while (out.size() < max_bytes) {
    size_t n = 0;
    for (int b = 0; b < 256; ++b) {
      if (index_->one_byte[b] < 0) continue;
      byte_of[n] = static_cast<uint8_t>(b);
      probe[n++] = {index_->one_byte[b], 0.0f, 0.0f};
    }
    llama_token_data_array arr = {probe.data(), n, -1, false};
    llama_sampler_apply(g, &arr);
    int allowed = -1;
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(probe[i].logit)) continue;
      if (allowed >= 0) return out;  // a choice: nothing more is forced
      allowed = byte_of[i];
    }
    if (allowed < 0) return out;
    if (eog != LLAMA_TOKEN_NULL && grammar_allows(g, eog)) return out;  // it may also end here
    if (!walk) {
      walk.reset(llama_sampler_clone(grammar_.get()));
      if (!walk) return out;
      g = walk.get();
    }
    if (!grammar_accept(g, index_->one_byte[allowed]).ok()) return out;
    out.push_back(static_cast<char>(allowed));
  }
  return out;
}

}  // namespace edgellm::engine
