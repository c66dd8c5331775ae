// TextPrefiller: decodes prompt tokens into the KV cache in chunks of n_batch (ExecuTorch's
// TextPrefiller). Compute buffers stay bounded by the chunk, not the prompt, and cancel and
// the governor act between chunks. It decodes from whatever position the cache ends at, so a
// caller that keeps a prefix in the cache prefills only the tokens after it. A prompt with
// media (media.h) holds runs of placeholder tokens: each run goes to the media evaluator,
// which encodes and decodes that chunk's embeddings, in order with the text around it.
#pragma once

#include <functional>
#include <vector>

#include "engine/decode_control.h"

namespace edgellm::engine {

// Evaluates the media placeholders at tokens[0..avail) of one chunk; `*n` gets how many.
using MediaEval = std::function<Result<FinishReason>(const llama_token* tokens, int32_t avail,
                                                     int32_t* n)>;

class TextPrefiller {
 public:
  TextPrefiller(DecodeControl& control, int32_t n_batch, MediaEval media = {})
      : control_(control), n_batch_(n_batch), media_(std::move(media)) {}

  // Decodes `total` tokens after what the cache holds. `on_chunk(done, total)` runs after each chunk
  // (false cancels). `*n_done` counts the tokens decoded. Returns kNone when all were decoded,
  // else why it stopped (kCancelled, kContextFull); errors as DecodeControl::Decode.
  Result<FinishReason> Prefill(const llama_token* tokens, int32_t total,
                               const std::function<bool(int32_t, int32_t)>& on_chunk,
                               int32_t* n_done);

 private:
  DecodeControl& control_;
  int32_t n_batch_;
  MediaEval media_;
};

}  // namespace edgellm::engine
