// DraftModel: a smaller model with the target's tokenizer, in a llama.cpp context of its own,
// that guesses the next tokens for speculative decoding (SpeculativeOptions::draft). Greedy,
// one decode per guessed token, stopping at the first token its own probability puts below
// p_min. Its cache follows the target's: before each guess it keeps the longest common prefix
// of what it holds and the target's tokens (the rejected guesses of the last step fall out)
// and decodes the rest in one batch, so a step costs the new tokens, not the history.
//
// Why not llama.cpp common's draft-model speculation: common_speculative re-tokenizes the
// prompt through the draft's vocabulary and keeps its own copy per server slot; edgellm's draft
// shares the target's tokens exactly (checked once, at session creation) and follows the
// session's own record of its cache, so there is one list of tokens to keep in step.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "edgellm/status.h"
#include "engine/model_impl.h"

namespace edgellm::engine {

// Whether `draft` can guess for `target`: the same vocabulary type and size, the same BOS and
// EOS, and every token the same text. kInvalidArgument naming the first difference.
Status check_draft_vocab(const Model::Impl& target, const Model::Impl& draft);

class DraftModel {
 public:
  // A context over `draft` of `n_ctx` tokens, batches of `n_batch`, `n_threads` threads;
  // `cancel` (the session's flag) aborts its decodes. `target_weight_bytes`: the target's
  // weights, for the first guess of the draft's cost. kResourceExhausted when llama.cpp cannot
  // create the context.
  static Result<std::unique_ptr<DraftModel>> Create(const Model::Impl& draft, int32_t n_ctx,
                                                    int32_t n_batch, int32_t n_threads,
                                                    uint64_t target_weight_bytes, bool warmup,
                                                    std::atomic<bool>* cancel);
  ~DraftModel();
  DraftModel(const DraftModel&) = delete;
  DraftModel& operator=(const DraftModel&) = delete;

  // Up to `n` greedy guesses after `history` (the target's cached tokens, the token sampled
  // last, and the guesses before these), with `n_threads` threads (the governor's). None when
  // `history` holds a token outside the vocabulary (a media placeholder), or does not leave
  // room in the context; fewer at an end-of-generation token or one below `p_min`. A decode
  // that fails or is cancelled ends the guess there (its cache is then emptied).
  const std::vector<llama_token>& Guess(const std::vector<llama_token>& history, int32_t n,
                                        float p_min, int32_t n_threads);
  // One guessed token's time (the catch-up decode counted with the first), a moving average;
  // before any guess, an estimate from the two models' sizes (relative_guess()).
  double token_ms() const { return token_ms_; }
  // The draft's cost relative to one target decode before any is measured: its share of the
  // weight bytes (decode reads each once), at least 0.05.
  double relative_guess() const { return relative_guess_; }
  // Time spent in Guess since the last call (the generation's spec_draft_ms), then reset.
  double TakeMs();
  // Frees the context (Session::ReleaseKv); the next Guess creates it again.
  void Release();

 private:
  DraftModel() = default;
  Status EnsureContext();

  const Model::Impl* model_ = nullptr;
  int32_t n_ctx_ = 0, n_batch_ = 0, n_threads_ = 0, cur_threads_ = 0;
  std::atomic<bool>* cancel_ = nullptr;
  llama_context* ctx_ = nullptr;
  std::vector<llama_token> cached_;  // the tokens the draft's cache holds, positions 0..
  std::vector<llama_token> out_;
  double token_ms_ = 0, relative_guess_ = 0.1, spent_ms_ = 0;
};

}  // namespace edgellm::engine
