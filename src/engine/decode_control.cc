#include "engine/decode_control.h"

#include <algorithm>
#include <string>

#include "engine/llama_glue.h"

namespace edgellm::engine {

DecodeControl::DecodeControl(llama_context* ctx, int32_t n_threads, PowerGovernor* governor,
                             const std::atomic<bool>& cancel, Stats* stats,
                             std::vector<llama_token>* cached)
    : ctx_(ctx),
      n_threads_(n_threads),
      cur_threads_(n_threads),
      governor_(governor),
      cancel_(cancel),
      stats_(stats),
      cached_(cached) {
  llama_set_n_threads(ctx_, cur_threads_, cur_threads_);  // undo the last call's throttle
  stats_->min_threads = cur_threads_;
}

void DecodeControl::Govern() {
  if (!governor_) return;
  stats_->paused_ms += governor_->WaitWhilePaused(cancel_);
  const int32_t want = governor_->ThreadsFor(n_threads_);
  if (want != cur_threads_) {
    llama_set_n_threads(ctx_, want, want);
    cur_threads_ = want;
    ++stats_->thread_changes;
    stats_->min_threads = std::min(stats_->min_threads, cur_threads_);
  }
}

Result<FinishReason> DecodeControl::Decode(const llama_token* tokens, int32_t n,
                                           const char* phase) {
  // llama_batch_get_one only reads the tokens.
  return Finish(llama_decode(ctx_, llama_batch_get_one(const_cast<llama_token*>(tokens), n)),
                tokens, n, phase);
}

Result<FinishReason> DecodeControl::DecodeEmbd(const float* embd, const llama_token* placeholders,
                                               int32_t n, int32_t n_embd, const char* phase) {
  (void)n_embd;  // the context knows its width; the caller sized `embd` by it
  // Positions and the sequence follow the cache, as for tokens; only the last row's logits.
  llama_batch b{};
  b.n_tokens = n;
  b.embd = const_cast<float*>(embd);  // read only
  return Finish(llama_decode(ctx_, b), placeholders, n, phase);
}

Result<FinishReason> DecodeControl::Finish(int32_t rc, const llama_token* tokens, int32_t n,
                                           const char* phase) {
  if (rc == 0) {
    cached_->insert(cached_->end(), tokens, tokens + n);
    return FinishReason::kNone;
  }
  // Whatever of this call reached the cache goes again: the cache holds exactly `cached_`.
  kv_remove(ctx_, n_cached(), -1);
  if (rc == 2) return FinishReason::kCancelled;
  if (rc == 1) return FinishReason::kContextFull;
  const std::string why = take_llama_errors();
  return Status::Internal(std::string("llama_decode failed during ") + phase + " (code " +
                          std::to_string(rc) + ")" + (why.empty() ? "" : ": " + why));
}

}  // namespace edgellm::engine
