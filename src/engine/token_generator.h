// TokenGenerator: sample -> stream -> decode until a stop (ExecuTorch's TextTokenGenerator).
// The prompt is already in the KV cache (TextPrefiller); the logits of its last position are
// where sampling starts. With speculation (o.speculative, speculator.h) each decode also
// checks the guessed next tokens: the token sampled last and the guess go in one batch with
// every position's logits; the tokens are then sampled in order from those logits exactly as
// one-token decodes would sample them (the same sampler, grammar and random draws), each guess
// kept while it equals the token sampled at its place, and the cells of the rejected rest are
// cut from the cache.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "engine/decode_control.h"
#include "engine/sampler.h"
#include "engine/streamer.h"

namespace edgellm::engine {

class DecodeCost;
class DraftModel;

class TokenGenerator {
 public:
  // `shown` (may be null): special tokens streamed as their text (a chat format's markers).
  TokenGenerator(const llama_vocab* vocab, DecodeControl& control, TokenSampler& sampler,
                 TextStreamer& streamer, const std::vector<llama_token>* shown = nullptr)
      : vocab_(vocab), control_(control), sampler_(sampler), streamer_(streamer), shown_(shown) {}

  // What the context allows: `n_ctx` positions, batches of `n_batch` tokens, a vocabulary of
  // `n_vocab`, and whether its memory can cut cells (kv_can_cut_tail): speculation needs it.
  struct Limits {
    int32_t n_ctx = 0;
    int32_t n_batch = 1;
    int32_t n_vocab = 0;
    bool can_cut = false;
    DraftModel* draft = nullptr;  // the session's draft model, when this call may use it
    DecodeCost* cost = nullptr;   // the session's decode cost model (null: this call's own)
    double* forced_accept = nullptr;  // the session's forced-guess acceptance (null: a prior)
  };

  // Generates within `limits`. Stops at an end-of-generation token (unless
  // o.ignore_eos) or a stop string (kStop), o.max_tokens (kLength), a full context that
  // `make_room` (may be empty) cannot free (kContextFull), or a cancel from the flag or the
  // sink (kCancelled). Fills st->ttft_ms (from `t_start`), n_gen, decode_ms, decode_tps,
  // decode_calls and the spec_* counts.
  Result<FinishReason> Run(const Limits& limits, const GenerateOptions& o,
                           std::chrono::steady_clock::time_point t_start, Stats* st,
                           const std::function<Result<bool>(DecodeControl&)>& make_room);

 private:
  // Streams a sampled token: kNone to go on, or why the generation stops there (an
  // end-of-generation token, a stop string, a cancel from the sink, max_tokens).
  FinishReason Emit(llama_token tok, const GenerateOptions& o, Stats* st);

  const llama_vocab* vocab_;
  DecodeControl& control_;
  TokenSampler& sampler_;
  TextStreamer& streamer_;
  const std::vector<llama_token>* shown_;
};

}  // namespace edgellm::engine
