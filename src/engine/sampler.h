// TokenSampler: picks the next token from the last logits, as GenerateOptions ask.
#pragma once

#include "edgellm/session.h"
#include "engine/llama_glue.h"

namespace edgellm::engine {

// Checks the sampling fields of `o`: kInvalidArgument naming the bad field.
Status validate_sampling(const GenerateOptions& o);

// Plain greedy (temperature 0, no repetition penalty) takes the argmax of the logits: no
// vocabulary-sized candidate array (151,936 entries for Qwen2) is rebuilt per token. Anything
// else runs llama.cpp's sampler chain (make_sampler_chain), which also records each chosen
// token for the repetition penalty.
//
// Thread safety: one generation at a time.
class TokenSampler {
 public:
  TokenSampler(const GenerateOptions& o, int32_t n_vocab);
  // The next token from the logits of the last decoded position of `ctx`.
  llama_token Sample(llama_context* ctx);

 private:
  int32_t n_vocab_;
  SamplerPtr chain_;  // null on the greedy fast path
};

}  // namespace edgellm::engine
