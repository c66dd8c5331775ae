// TokenGenerator: sample -> stream -> decode, one token at a time, until a stop (ExecuTorch's
// TextTokenGenerator). The prompt is already in the KV cache (TextPrefiller); the logits of
// its last position are where sampling starts.
#pragma once

#include <chrono>
#include <functional>
#include <vector>

#include "engine/decode_control.h"
#include "engine/sampler.h"
#include "engine/streamer.h"

namespace edgellm::engine {

class TokenGenerator {
 public:
  // `shown` (may be null): special tokens streamed as their text (a chat format's markers).
  TokenGenerator(const llama_vocab* vocab, DecodeControl& control, TokenSampler& sampler,
                 TextStreamer& streamer, const std::vector<llama_token>* shown = nullptr)
      : vocab_(vocab), control_(control), sampler_(sampler), streamer_(streamer), shown_(shown) {}

  // Generates in a context of `n_ctx` positions. Stops at an end-of-generation token (unless
  // o.ignore_eos) or a stop string (kStop), o.max_tokens (kLength), a full context that
  // `make_room` (may be empty) cannot free (kContextFull), or a cancel from the flag or the
  // sink (kCancelled). Fills st->ttft_ms (from `t_start`), n_gen, decode_ms and decode_tps.
  Result<FinishReason> Run(int32_t n_ctx, const GenerateOptions& o,
                           std::chrono::steady_clock::time_point t_start, Stats* st,
                           const std::function<Result<bool>(DecodeControl&)>& make_room);

 private:
  const llama_vocab* vocab_;
  DecodeControl& control_;
  TokenSampler& sampler_;
  TextStreamer& streamer_;
  const std::vector<llama_token>* shown_;
};

}  // namespace edgellm::engine
