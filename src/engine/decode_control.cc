#include "engine/decode_control.h"

#include <algorithm>
#include <numeric>
#include <string>

#include "engine/llama_glue.h"

namespace edgellm::engine {

void KvPositions::Identity(size_t n) {
  cell.resize(n);
  std::iota(cell.begin(), cell.end(), 0);
  next = static_cast<llama_pos>(n);
}

bool KvPositions::IsIdentity() const {
  if (next != static_cast<llama_pos>(cell.size())) return false;
  for (size_t i = 0; i < cell.size(); ++i) {
    if (cell[i] != static_cast<llama_pos>(i)) return false;
  }
  return true;
}

bool cut_cache_at(llama_context* ctx, std::vector<llama_token>* cached, KvPositions* pos,
                  llama_pos p) {
  if (!kv_remove(ctx, p, -1)) return false;
  // Positions never decrease along the cache: the cells before the first at `p` stay.
  const size_t keep = static_cast<size_t>(
      std::lower_bound(pos->cell.begin(), pos->cell.end(), p) - pos->cell.begin());
  cached->resize(keep);
  pos->cell.resize(keep);
  pos->next = p;
  return true;
}

bool cut_cache(llama_context* ctx, std::vector<llama_token>* cached, KvPositions* pos, size_t n) {
  return n >= cached->size() || cut_cache_at(ctx, cached, pos, pos->cell[n]);
}

DecodeControl::DecodeControl(llama_context* ctx, int32_t n_threads, PowerGovernor* governor,
                             const std::atomic<bool>& cancel, Stats* stats,
                             std::vector<llama_token>* cached, KvPositions* pos)
    : ctx_(ctx),
      n_threads_(n_threads),
      cur_threads_(n_threads),
      governor_(governor),
      cancel_(cancel),
      stats_(stats),
      cached_(cached),
      pos_(pos) {
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
                                           const char* phase, bool all_logits,
                                           int32_t first_logit) {
  const llama_pos first = pos_->next;
  batch_pos_.resize(static_cast<size_t>(n));
  std::iota(batch_pos_.begin(), batch_pos_.end(), first);
  // llama_batch_get_one only reads the tokens; an M-RoPE model spreads a text token's one
  // position over its sections itself.
  llama_batch b = llama_batch_get_one(const_cast<llama_token*>(tokens), n);
  b.pos = batch_pos_.data();
  if (all_logits) {
    batch_logits_.assign(static_cast<size_t>(n), 1);
    std::fill_n(batch_logits_.begin(), std::clamp(first_logit, 0, n - 1), 0);
    b.logits = batch_logits_.data();
  }
  return Finish(llama_decode(ctx_, b), tokens, n, first, first + n, phase);
}

Result<FinishReason> DecodeControl::DecodeEmbd(const float* embd, const llama_token* placeholders,
                                               int32_t n, llama_pos first, const int32_t* mrope,
                                               uint8_t mrope_shift, llama_pos next,
                                               const char* phase) {
  const size_t count = static_cast<size_t>(n);
  if (mrope) {
    // llama_batch's M-RoPE layout: all embeddings' time positions (the cells' positions),
    // then heights, widths, the fourth section.
    batch_pos_.assign(count * 4, 0);
    for (size_t i = 0; i < count; ++i) {
      for (size_t k = 0; k < 4; ++k) {
        const llama_pos base = (mrope_shift >> k) & 1u ? first : 0;
        batch_pos_[k * count + i] = base + mrope[i * 4 + k];
      }
    }
  } else {
    batch_pos_.resize(count);
    std::iota(batch_pos_.begin(), batch_pos_.end(), first);
  }
  // The sequence follows the cache, as for tokens; only the last row's logits.
  llama_batch b{};
  b.n_tokens = n;
  b.embd = const_cast<float*>(embd);  // read only
  b.pos = batch_pos_.data();
  return Finish(llama_decode(ctx_, b), placeholders, n, count == 0 ? first : batch_pos_[0], next,
                phase);
}

Result<FinishReason> DecodeControl::Finish(int32_t rc, const llama_token* tokens, int32_t n,
                                           llama_pos from, llama_pos next, const char* phase) {
  if (rc == 0) {
    cached_->insert(cached_->end(), tokens, tokens + n);
    // The cells' positions: the batch's first n (the time section under M-RoPE).
    pos_->cell.insert(pos_->cell.end(), batch_pos_.begin(), batch_pos_.begin() + n);
    pos_->next = next;
    return FinishReason::kNone;
  }
  // Whatever of this call reached the cache goes again, and any cached cell at its positions
  // (an M-RoPE chunk's earlier part): the cache holds exactly `cached_`.
  cut_cache_at(ctx_, cached_, pos_, from);
  if (rc == 2) return FinishReason::kCancelled;
  if (rc == 1) return FinishReason::kContextFull;
  const std::string why = take_llama_errors();
  return Status::Internal(std::string("llama_decode failed during ") + phase + " (code " +
                          std::to_string(rc) + ")" + (why.empty() ? "" : ": " + why));
}

}  // namespace edgellm::engine
