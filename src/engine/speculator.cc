#include "engine/speculator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/model_impl.h"

namespace edgellm::engine {

namespace {

constexpr int32_t kMaxDraft = kMaxDraftTokens;
constexpr double kAlpha = 0.15;  // weight of the newest sample in the moving averages
// Steps in a row with a guess not taken before one small guess is checked anyway, so that a
// source whose acceptance fell (or a cost that rose) is measured again: every 16 steps at
// least, fewer where a check costs more, so that exploring costs at most kExploreBudget of
// plain decode's time (a 2-token check costing 1.8 one-token decodes: every 40 steps).
constexpr int32_t kExploreEvery = 16;
constexpr int32_t kExploreSize = 1;
constexpr double kExploreBudget = 0.02;
// Decodes in a row with a guess before one is made plain, to time a one-token decode.
constexpr int32_t kMeasureOneEvery = 32;

double ema(double old, double sample) { return old + kAlpha * (sample - old); }

}  // namespace

Status validate_speculative(const SpeculativeOptions& o) {
  if (o.max_draft < 0 || o.max_draft > kMaxDraft) {
    return Status::InvalidArgument("speculative.max_draft is " + std::to_string(o.max_draft) +
                                   ": use 0 (off) to " + std::to_string(kMaxDraft));
  }
  if (o.ngram_min < 1 || o.ngram_min > 8) {
    return Status::InvalidArgument("speculative.ngram_min is " + std::to_string(o.ngram_min) +
                                   ": use 1 to 8");
  }
  if (o.ngram_max < o.ngram_min || o.ngram_max > 8) {
    return Status::InvalidArgument("speculative.ngram_max is " + std::to_string(o.ngram_max) +
                                   ": use ngram_min (" + std::to_string(o.ngram_min) +
                                   ") to 8");
  }
  if (!(o.draft_p_min >= 0.0f && o.draft_p_min <= 1.0f)) {
    return Status::InvalidArgument("speculative.draft_p_min is " +
                                   std::to_string(o.draft_p_min) + ": use 0 to 1");
  }
  return Status::Ok();
}

std::vector<llama_token> ngram_draft(const std::vector<llama_token>& history, int32_t n_min,
                                     int32_t n_max, int32_t room, int32_t n_vocab) {
  std::vector<llama_token> out;
  const int64_t size = static_cast<int64_t>(history.size());
  if (room <= 0) return out;
  for (int64_t n = std::min<int64_t>(n_max, size - 1); n >= n_min; --n) {
    const llama_token* tail = history.data() + size - n;
    bool usable = true;  // a tail with a media placeholder matches nothing worth guessing
    for (int64_t i = 0; i < n; ++i) usable = usable && tail[i] >= 0 && tail[i] < n_vocab;
    if (!usable) continue;
    // The most recent earlier occurrence: starts from size - n - 1 down to 0.
    for (int64_t s = size - n - 1; s >= 0; --s) {
      if (!std::equal(tail, tail + n, history.data() + s)) continue;
      for (int64_t j = s + n; j < size && static_cast<int32_t>(out.size()) < room; ++j) {
        if (history[j] < 0 || history[j] >= n_vocab) break;
        out.push_back(history[j]);
      }
      if (!out.empty()) return out;
    }
  }
  return out;
}

bool Speculator::ProbeForced() {
  if (!o_.adaptive || o_.jump_commit || probe_skip_ == 0) return true;
  --probe_skip_;
  return false;
}

void Speculator::NoteProbe(bool found, double ms) {
  if (!o_.adaptive || o_.jump_commit) return;
  if (found) {
    empty_probes_ = probe_backoff_ = 0;
    return;
  }
  if (++empty_probes_ < 4 || !(cost_->one_ms() > 0 && ms > 0.01 * cost_->one_ms())) return;
  probe_backoff_ = std::min(32, std::max(1, probe_backoff_ * 2));
  probe_skip_ = probe_backoff_;
  empty_probes_ = 3;  // after the skip, one more empty look backs off further
}

Speculator::Speculator(const SpeculativeOptions& o, const llama_vocab* vocab, int32_t n_vocab,
                       bool enabled, DraftModel* draft, DecodeCost* cost,
                       double* forced_accept)
    : o_(o),
      vocab_(vocab),
      n_vocab_(n_vocab),
      enabled_(enabled && o.max_draft > 0 && (o.ngram || o.jump || (o.draft && draft))),
      cost_(cost ? cost : &own_cost_),
      forced_accept_(forced_accept),
      model_(o.draft ? draft : nullptr) {
  if (forced_accept_) accept_forced_ = *forced_accept_;
}

const std::vector<llama_token>& Speculator::Draft(const std::vector<llama_token>& cached,
                                                  llama_token pending, TokenSampler& sampler,
                                                  int32_t room, int32_t n_threads,
                                                  int32_t* n_forced, int32_t* n_commit) {
  draft_.clear();
  *n_forced = *n_commit = 0;
  source_ = Source::kNone;
  room = std::min(room, o_.max_draft);
  if (!enabled_ || room <= 0) return draft_;
  // One plain decode now and then keeps one token's time measured at the cache's depth, which
  // every cost comparison divides by.
  if (o_.adaptive && cost_->since_one() >= kMeasureOneEvery) return draft_;
  if (o_.jump && sampler.constrained() && ProbeForced()) {
    // A token is rarely longer than 16 bytes: enough forced text for `room` tokens.
    const auto t0 = std::chrono::steady_clock::now();
    const std::string text = sampler.ForcedText(vocab_, static_cast<size_t>(room) * 16);
    NoteProbe(!text.empty(), std::chrono::duration<double, std::milli>(
                                 std::chrono::steady_clock::now() - t0).count());
    if (!text.empty()) {
      Result<std::vector<int32_t>> t = tokenize(vocab_, text, false, /*parse_special=*/false);
      if (t.ok()) {
        for (int32_t tok : *t) {
          if (static_cast<int32_t>(draft_.size()) >= room) break;
          draft_.push_back(tok);
        }
      }
      *n_forced = static_cast<int32_t>(draft_.size());
      // All but the last: its split may change with the text that follows.
      if (o_.jump_commit) *n_commit = std::max(0, *n_forced - 1);
    }
  }
  const auto left = [&] { return room - static_cast<int32_t>(draft_.size()); };
  if ((o_.ngram || model_) && left() > 0) {
    // The sources look at everything before the guess: the cache, the token sampled last and
    // the forced text.
    history_.assign(cached.begin(), cached.end());
    history_.push_back(pending);
    history_.insert(history_.end(), draft_.begin(), draft_.end());
  }
  if (o_.ngram && left() > 0) {
    const std::vector<llama_token> more =
        ngram_draft(history_, o_.ngram_min, o_.ngram_max, left(), n_vocab_);
    if (!more.empty()) source_ = Source::kNgram;
    draft_.insert(draft_.end(), more.begin(), more.end());
  }
  if (model_ && source_ == Source::kNone && left() > 0) {
    const int32_t want = ChooseModel(*n_commit, *n_forced, left());
    if (want > 0) {
      const std::vector<llama_token>& more = model_->Guess(history_, want, o_.draft_p_min,
                                                           n_threads);
      if (!more.empty()) source_ = Source::kModel;
      draft_.insert(draft_.end(), more.begin(), more.end());
    }
  }
  // A draft model's guesses were sized by ChooseModel (with their own cost, or as an
  // exploration): checked as they are.
  if (source_ != Source::kModel) {
    draft_.resize(static_cast<size_t>(
        Choose(*n_commit, *n_forced, static_cast<int32_t>(draft_.size()))));
  }
  *n_forced = std::min(*n_forced, static_cast<int32_t>(draft_.size()));
  *n_commit = std::min(*n_commit, *n_forced);
  return draft_;
}

bool Speculator::Explore() {
  const double extra = cost_->Relative(1 + kExploreSize) - 1.0;
  const int32_t every = std::max(kExploreEvery, static_cast<int32_t>(extra / kExploreBudget));
  if (++idle_ < every) return false;
  idle_ = 0;
  return true;
}

int32_t Speculator::Choose(int32_t n_commit, int32_t n_forced, int32_t n_total) {
  if (n_total == 0 || !o_.adaptive) return n_total;
  // Tokens taken unchecked are the grammar's text, decoded in this batch or one by one in the
  // next steps: always in the batch. What comes after them is weighed as a guess.
  // Expected tokens from one decode that checks k guesses: 1 (the model's own next token)
  // plus, for each guess, the chance that it and all before it are kept. Per unit of cost.
  // (A draft model's guesses are paid for by now: only the check's cost counts.)
  const double accept_tail = source_ == Source::kModel ? accept_model_ : accept_ngram_;
  double best = 1.0 / cost_->Relative(1), expected = 1.0, p = 1.0;
  int32_t best_k = 0;
  for (int32_t k = 1; k <= n_total; ++k) {
    p *= k <= n_commit ? 1.0 : k <= n_forced ? accept_forced_ : accept_tail;
    expected += p;
    const double rate = expected / cost_->Relative(k + 1);
    if (k <= n_commit || rate > best) {
      best = rate;
      best_k = k;
    }
  }
  if (best_k > n_commit) {
    idle_ = 0;
    return best_k;
  }
  if (n_commit > 0) return n_commit;  // the unchecked text alone
  return Explore() ? std::min(n_total, kExploreSize) : 0;
}

int32_t Speculator::ChooseModel(int32_t n_commit, int32_t n_forced, int32_t room) {
  if (!o_.adaptive) return room;
  // Each draft token costs `d` target decodes; the draft stops early at a weak token, so this
  // is what asking for up to j tokens costs at most.
  const double target_ms = cost_->one_ms();
  const double d = model_->token_ms() > 0 && target_ms > 0 ? model_->token_ms() / target_ms
                                                           : model_->relative_guess();
  double expected = 1.0, p = 1.0;
  for (int32_t i = 0; i < n_forced; ++i) {
    p *= i < n_commit ? 1.0 : accept_forced_;
    expected += p;
  }
  double best = expected / cost_->Relative(n_forced + 1);
  int32_t best_j = 0;
  for (int32_t j = 1; j <= room; ++j) {
    p *= accept_model_;
    expected += p;
    const double rate = expected / (cost_->Relative(n_forced + j + 1) + j * d);
    if (rate > best) {
      best = rate;
      best_j = j;
    }
  }
  if (best_j > 0) return best_j;
  return Explore() ? std::min(room, kExploreSize) : 0;
}

void Speculator::Record(int32_t batch, double ms, int32_t drafted, int32_t forced,
                        int32_t accepted, int32_t n_threads, int32_t committed) {
  cost_->Record(batch, ms, n_threads);
  // Each guess whose predecessors were all kept tells whether this one is: up to the first
  // rejection.
  double& tail = source_ == Source::kModel ? accept_model_ : accept_ngram_;
  for (int32_t i = committed; i < drafted && i <= accepted; ++i) {
    double& a = i < forced ? accept_forced_ : tail;
    a = ema(a, i < accepted ? 1.0 : 0.0);
  }
  if (forced_accept_ && forced > committed) *forced_accept_ = accept_forced_;
}

}  // namespace edgellm::engine
