// Speculator: the guesses TokenGenerator checks with each decode (speculative decoding), and
// how many are worth checking. Sources: the grammar's forced text (jump-forward), then n-gram
// lookup over the context (prompt lookup decoding), then a draft model (draft_model.h) where
// the lookup has nothing. Adaptive: every guessed position is scored
// (kept or not, per source), every decode is timed by its batch size, and a step guesses the k
// tokens that give the most tokens per unit of decode time by those two measures (none when
// plain decode wins), so a generation where nothing matches runs as plain decode.
//
// Why edgellm's own n-gram lookup and not llama.cpp common's common_speculative: common's
// drafts keep their own copy of the prompt and take calls per sequence, around a server's
// batch of slots; the session already holds the exact token list of its KV cache (prompt,
// history, reply, media placeholders) and cuts it on every rejection, so a lookup over that
// list needs no second state to keep in step, and costs one backwards scan per step.
#pragma once

#include <cstdint>
#include <vector>

#include "edgellm/session.h"
#include "engine/decode_cost.h"
#include "engine/draft_model.h"
#include "engine/sampler.h"

namespace edgellm::engine {

// Checks o.speculative: kInvalidArgument naming the bad field.
Status validate_speculative(const SpeculativeOptions& o);

// The longest match of the last n tokens of `history` (n from `n_max` down to `n_min`) at an
// earlier place in it, most recent first: up to `room` of the tokens that followed, stopping
// before any outside [0, n_vocab) (media placeholders). Empty when nothing matches.
std::vector<llama_token> ngram_draft(const std::vector<llama_token>& history, int32_t n_min,
                                     int32_t n_max, int32_t room, int32_t n_vocab);

class Speculator {
 public:
  // `enabled`: whether this context may speculate at all (a memory that can cut its cells, a
  // batch of more than one token).
  // `draft` (may be null): the session's draft model. `cost` (may be null: one of its own):
  // the session's decode cost model, which Record() updates. `forced_accept` (may be null):
  // the session's estimate of how often the model keeps a forced guess — a property of the
  // model (whether it spells forced text the tokenizer's way), not of the request — which
  // this generation starts from and updates.
  Speculator(const SpeculativeOptions& o, const llama_vocab* vocab, int32_t n_vocab,
             bool enabled, DraftModel* draft = nullptr, DecodeCost* cost = nullptr,
             double* forced_accept = nullptr);

  bool enabled() const { return enabled_; }
  // The guess after the tokens in the cache (`cached`) and `pending` (sampled, not decoded),
  // at most `room` tokens. `sampler`'s grammar (already past `pending`) gives the forced text.
  // Sets *n_forced to how many of the guess's first tokens are the grammar's, and *n_commit to
  // how many of those are taken without a check (jump_commit). `n_threads`:
  // the threads the governor allows now (the draft model's decodes use them too).
  const std::vector<llama_token>& Draft(const std::vector<llama_token>& cached,
                                        llama_token pending, TokenSampler& sampler, int32_t room,
                                        int32_t n_threads, int32_t* n_forced,
                                        int32_t* n_commit);
  // Whether the last Draft's guesses after the forced ones came from the draft model.
  bool last_from_model() const { return source_ == Source::kModel; }
  // After a decode of `batch` tokens that took `ms`: of a guess of `drafted` tokens
  // (`forced` of them first, from the grammar, `committed` of those taken unchecked), the first
  // `accepted` were kept.
  // `n_threads`: the threads that decode ran with.
  void Record(int32_t batch, double ms, int32_t drafted, int32_t forced, int32_t accepted,
              int32_t n_threads = 0, int32_t committed = 0);

  const DecodeCost& cost() const { return *cost_; }
  double accept_forced() const { return accept_forced_; }
  double accept_ngram() const { return accept_ngram_; }
  double accept_model() const { return accept_model_; }

 private:
  enum class Source { kNone, kNgram, kModel };
  // How many of a guess of `n_total` tokens (`n_commit` first, certain, then forced ones up to
  // `n_forced`, the rest from source_) to check.
  int32_t Choose(int32_t n_commit, int32_t n_forced, int32_t n_total);
  // How many tokens to ask the draft model for after `n_forced` forced ones, at most `room`:
  // its guesses cost a draft decode each, on top of the longer check.
  int32_t ChooseModel(int32_t n_commit, int32_t n_forced, int32_t room);
  // After `explored` steps that checked nothing: whether to check a small guess anyway.
  bool Explore();
  // Whether to look for forced text at this step, and what a look found and cost. Looking
  // checks 256 one-byte tokens against the grammar (~30 us here); on a model that decodes a
  // token in well under a millisecond that is several percent of the step. Adaptive, not
  // jump_commit (whose text depends on what was found): after 4 looks in a row that found
  // nothing, each costing over 1% of a token's decode, skip the next 1, 2, 4 ... 32 steps'
  // looks until one finds forced text again.
  bool ProbeForced();
  void NoteProbe(bool found, double ms);
  SpeculativeOptions o_;
  const llama_vocab* vocab_;
  int32_t n_vocab_;
  bool enabled_;
  DecodeCost own_cost_;
  DecodeCost* cost_;
  double* forced_accept_;
  DraftModel* model_;
  Source source_ = Source::kNone;
  // EMA of P(kept | the ones before kept), per source.
  double accept_forced_ = 0.9, accept_ngram_ = 0.6, accept_model_ = 0.6;
  int32_t idle_ = 0;  // steps in a row that had a guess and checked none
  int32_t empty_probes_ = 0, probe_backoff_ = 0, probe_skip_ = 0;
  std::vector<llama_token> history_, draft_;
};

}  // namespace edgellm::engine
