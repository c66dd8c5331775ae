// TokenSampler: picks the next token from the last logits, as GenerateOptions ask, within a
// grammar when one is set.
#pragma once

#include <string>
#include <vector>

#include "edgellm/session.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"

namespace edgellm::engine {

// Checks the sampling fields of `o`: kInvalidArgument naming the bad field.
Status validate_sampling(const GenerateOptions& o);

// Plain greedy (temperature 0, no repetition penalty) takes the argmax of the logits: no
// vocabulary-sized candidate array (151,936 entries for Qwen2) is rebuilt per token. Anything
// else runs llama.cpp's sampler chain (make_sampler_chain), which also records each chosen
// token for the repetition penalty.
//
// With a grammar, the token is drawn first as if there were none and only that one token is
// checked against the grammar; only when the grammar rejects it is the whole vocabulary
// checked and the token drawn again from what the grammar allows (llama.cpp's common sampler
// does the same). The draw is the one the constrained distribution gives whenever the first
// choice is allowed, and checking one token instead of 151,936 keeps decode speed. When it is
// rejected, greedy and top-k sampling (without a repetition penalty) check the vocabulary in
// descending logit order, a chunk at a time, until they hold the top_k highest allowed tokens
// (1 for greedy): the same set a fully masked vocabulary would give top-k, so the same draw,
// usually after a few hundred checks; tokens whose first byte the grammar rejects (one check of
// each one-byte token tells) are skipped without a check. With min-p on, the search also stops at
// tokens whose logit is below the best allowed one's + log(min_p), which min-p would drop (top-p
// then normalizes over the tokens kept: its cutoff may differ a little from a fully masked
// vocabulary's). Otherwise every token is checked.
//
// Thread safety: one generation at a time.
class TokenSampler {
 public:
  TokenSampler(const GenerateOptions& o, int32_t n_vocab);
  // Constrains every later token by `grammar` (a grammar sampler). `index` (may be null: every
  // token is a candidate) lets a rejected draw skip the tokens whose first byte the grammar
  // rejects.
  void SetGrammar(SamplerPtr grammar, const Model::Impl::VocabIndex* index) {
    grammar_ = std::move(grammar);
    index_ = index;
  }
  bool constrained() const { return grammar_ != nullptr; }
  // The next token from the logits of output `idx` of the last decode of `ctx` (-1: its last).
  // With a grammar: kInvalidArgument when the grammar allows no token of the vocabulary here.
  Result<llama_token> Sample(llama_context* ctx, int32_t idx = -1);
  // Takes `tok` as the next token without drawing one (forced text taken unchecked): the
  // grammar and the repetition history move past it. kInvalidArgument when the grammar
  // rejects it.
  Status Accept(llama_token tok);
  // The text the grammar forces next, up to `max_bytes`: bytes while exactly one is allowed
  // and the grammar cannot end (probed with the vocabulary's one-byte tokens on a copy of
  // the grammar). Empty without a grammar, or with one that matches token ids.
  std::string ForcedText(const llama_vocab* vocab, size_t max_bytes);
  // Tokens whose first draw the grammar rejected.
  int32_t resamples() const { return resamples_; }

 private:
  llama_token Draw(const float* logits, bool with_grammar);
  llama_token DrawNarrowed(const float* logits);
  // cur_ = every token with its logit.
  void FillAll(const float* logits);
  // The chain's draw from `arr` (the argmax on the greedy path); null when empty.
  llama_token Pick(llama_token_data_array* arr);
  // cur_ = the tokens a rejected draw considers (all, or those of first bytes allowed).
  void Candidates(const float* logits);

  int32_t n_vocab_;
  SamplerPtr chain_;    // null on the greedy fast path
  SamplerPtr grammar_;  // null without a grammar
  const Model::Impl::VocabIndex* index_ = nullptr;
  std::vector<llama_token_data> cur_, allowed_;
  size_t narrow_k_ = 0;    // 0: a rejected draw checks the whole vocabulary
  float min_p_floor_ = 0;  // log(min_p) when min-p is on (< 0), else 0
  int32_t resamples_ = 0;
};

}  // namespace edgellm::engine
