#include "engine/text_prefiller.h"

#include <algorithm>

namespace edgellm::engine {

Result<FinishReason> TextPrefiller::Prefill(const llama_token* tokens, int32_t total,
                                            const std::function<bool(int32_t, int32_t)>& on_chunk,
                                            int32_t* n_done) {
  *n_done = 0;
  for (int32_t i = 0; i < total; i += n_batch_) {
    if (control_.cancelled()) return FinishReason::kCancelled;
    control_.Govern();
    const int32_t n = std::min(n_batch_, total - i);
    Result<FinishReason> r = control_.Decode(tokens + i, n, "prefill");
    if (!r.ok() || *r != FinishReason::kNone) return r;
    *n_done = i + n;
    if (on_chunk && !on_chunk(i + n, total)) return FinishReason::kCancelled;
  }
  return FinishReason::kNone;
}

}  // namespace edgellm::engine
