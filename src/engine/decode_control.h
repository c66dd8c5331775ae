// DecodeControl: what both phases of a generation do around every llama_decode call: check
// the cancel flag, apply the power governor (pause, thermal thread count), map llama_decode's
// result to a finish reason, and keep the session's record of cached tokens true.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "edgellm/power.h"
#include "edgellm/session.h"
#include "llama.h"

namespace edgellm::engine {

class DecodeControl {
 public:
  // `stats` receives the governor's counts (thread_changes, min_threads, paused_ms). `governor`
  // may be null. `cached` is the session's list of the tokens in the KV cache: decoded
  // tokens are appended to it. All must outlive the control.
  DecodeControl(llama_context* ctx, int32_t n_threads, PowerGovernor* governor,
                const std::atomic<bool>& cancel, Stats* stats, std::vector<llama_token>* cached);

  bool cancelled() const { return cancel_.load(); }
  // Waits while the governor pauses and applies its thread count. Call between decodes only.
  void Govern();
  // Decodes `n` tokens after what the KV cache holds and records them as cached. kNone on
  // success, kCancelled when the abort callback stopped it, kContextFull when the cache has no
  // room (then nothing of the call stays cached); another failure is kInternal with
  // llama.cpp's message, naming `phase` ("prefill", "decode").
  Result<FinishReason> Decode(const llama_token* tokens, int32_t n, const char* phase);
  // Decodes `n` embeddings (n x n_embd floats: a media chunk's) after what the cache holds,
  // recorded as cached under `placeholders` (media.h). Results as Decode.
  Result<FinishReason> DecodeEmbd(const float* embd, const llama_token* placeholders, int32_t n,
                                  int32_t n_embd, const char* phase);
  int32_t n_cached() const { return static_cast<int32_t>(cached_->size()); }

  PowerGovernor* governor() const { return governor_; }
  llama_context* context() const { return ctx_; }

 private:
  // Records a decode's tokens as cached (rc 0) or maps its failure.
  Result<FinishReason> Finish(int32_t rc, const llama_token* tokens, int32_t n, const char* phase);

  llama_context* ctx_;
  int32_t n_threads_;
  int32_t cur_threads_;
  PowerGovernor* governor_;
  const std::atomic<bool>& cancel_;
  Stats* stats_;
  std::vector<llama_token>* cached_;
};

}  // namespace edgellm::engine
