// DecodeControl: what both phases of a generation do around every llama_decode call: check
// the cancel flag, apply the power governor (pause, thermal thread count), map llama_decode's
// result to a finish reason, and keep the session's record of cached tokens and their
// positions true.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "edgellm/power.h"
#include "edgellm/session.h"
#include "llama.h"

namespace edgellm::engine {

// Where the cached tokens' KV cells sit in sequence 0: one position per cached token, and the
// position the next token takes. Text advances one position a token, and so do media chunks,
// except under M-RoPE (Qwen2-VL): there an image's cells all sit at the chunk's first position
// (its time section; height and width vary) and the next token comes max(rows, columns)
// positions later. Without M-RoPE media, cell[i] == i and next == cell.size().
struct KvPositions {
  std::vector<llama_pos> cell;
  llama_pos next = 0;
  void Clear() {
    cell.clear();
    next = 0;
  }
  // Positions 0..n-1 (text, or media without M-RoPE).
  void Identity(size_t n);
  // Whether they are 0..size()-1 with the next at size(): what a saved KV file restores.
  bool IsIdentity() const;
};

// Removes the cells from cached token `n` on (positions from cell[n]: under M-RoPE, the whole
// media chunk `n` falls in) and trims `cached` and `pos` to what stays. False when the memory
// cannot cut a sequence (then nothing changed).
bool cut_cache(llama_context* ctx, std::vector<llama_token>* cached, KvPositions* pos, size_t n);
// The same from position `p` on: the cells at `p` or later, and their tokens.
bool cut_cache_at(llama_context* ctx, std::vector<llama_token>* cached, KvPositions* pos,
                  llama_pos p);

class DecodeControl {
 public:
  // `stats` receives the governor's counts (thread_changes, min_threads, paused_ms). `governor`
  // may be null. `cached` is the session's list of the tokens in the KV cache and `pos` their
  // positions: decoded tokens are appended to both. All must outlive the control.
  DecodeControl(llama_context* ctx, int32_t n_threads, PowerGovernor* governor,
                const std::atomic<bool>& cancel, Stats* stats, std::vector<llama_token>* cached,
                KvPositions* pos);

  bool cancelled() const { return cancel_.load(); }
  // Waits while the governor pauses and applies its thread count. Call between decodes only.
  void Govern();
  // Decodes `n` tokens after what the KV cache holds (at pos->next on) and records them as
  // cached. kNone on success, kCancelled when the abort callback stopped it, kContextFull when
  // the cache has no room (then nothing of the call stays cached); another failure is
  // kInternal with llama.cpp's message, naming `phase` ("prefill", "decode"). With
  // `all_logits`, the logits of every token from `first_logit` on are kept (read by batch
  // index), else the last's.
  Result<FinishReason> Decode(const llama_token* tokens, int32_t n, const char* phase,
                              bool all_logits = false, int32_t first_logit = 0);
  // Removes the cached tokens from `n` on (a speculative decode's rejected guesses). False
  // when the memory cannot cut a sequence.
  bool CutTo(size_t n) { return cut_cache(ctx_, cached_, pos_, n); }
  const std::vector<llama_token>& cached() const { return *cached_; }
  // Decodes `n` embeddings (n x n_embd floats: part of a media chunk) recorded as cached under
  // `placeholders` (media.h). Positions: `first` + i; or with `mrope` (4 per embedding,
  // relative to the chunk's first position `first`, the sections in `mrope_shift` moving with
  // it) as an M-RoPE model takes them. `next` is the position after this call (the chunk's
  // end under M-RoPE). On a failure the whole chunk leaves the cache under M-RoPE (its cells
  // share one position). Results as Decode.
  Result<FinishReason> DecodeEmbd(const float* embd, const llama_token* placeholders, int32_t n,
                                  llama_pos first, const int32_t* mrope, uint8_t mrope_shift,
                                  llama_pos next, const char* phase);
  int32_t n_cached() const { return static_cast<int32_t>(cached_->size()); }
  const KvPositions& positions() const { return *pos_; }

  PowerGovernor* governor() const { return governor_; }
  // The threads decodes use now (the governor's count).
  int32_t threads() const { return cur_threads_; }
  llama_context* context() const { return ctx_; }

 private:
  // Records a decode's tokens and positions as cached (rc 0), or removes what the call left
  // from position `from` on and maps its failure.
  Result<FinishReason> Finish(int32_t rc, const llama_token* tokens, int32_t n, llama_pos from,
                              llama_pos next, const char* phase);

  llama_context* ctx_;
  int32_t n_threads_;
  int32_t cur_threads_;
  PowerGovernor* governor_;
  const std::atomic<bool>& cancel_;
  Stats* stats_;
  std::vector<llama_token>* cached_;
  KvPositions* pos_;
  std::vector<llama_pos> batch_pos_;  // the current call's positions (a llama_batch's pos)
  std::vector<int8_t> batch_logits_;  // its output flags, with all_logits
};

}  // namespace edgellm::engine
