#include "engine/text_prefiller.h"

#include <algorithm>

#include "engine/media.h"

namespace edgellm::engine {

Result<FinishReason> TextPrefiller::Prefill(const llama_token* tokens, int32_t total,
                                            const std::function<bool(int32_t, int32_t)>& on_chunk,
                                            int32_t* n_done) {
  *n_done = 0;
  for (int32_t i = 0; i < total;) {
    if (control_.cancelled()) return FinishReason::kCancelled;
    control_.Govern();
    int32_t n = 0;
    if (is_media_token(tokens[i])) {
      if (!media_) return Status::Internal("a media placeholder in a prompt without media");
      Result<FinishReason> r = media_(tokens + i, total - i, &n);
      if (!r.ok()) return r;
      i += n;
      *n_done = i;
      if (*r != FinishReason::kNone) return r;
    } else {
      while (n < n_batch_ && i + n < total && !is_media_token(tokens[i + n])) ++n;
      Result<FinishReason> r = control_.Decode(tokens + i, n, "prefill");
      if (!r.ok() || *r != FinishReason::kNone) return r;
      i += n;
      *n_done = i;
    }
    if (on_chunk && !on_chunk(i, total)) return FinishReason::kCancelled;
  }
  return FinishReason::kNone;
}

}  // namespace edgellm::engine
