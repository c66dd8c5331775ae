#include "engine/token_generator.h"

#include <algorithm>
#include <string>
#include <thread>

#include "engine/model_impl.h"
#include "engine/speculator.h"

namespace edgellm::engine {

using Clock = std::chrono::steady_clock;

FinishReason TokenGenerator::Emit(llama_token tok, const GenerateOptions& o, Stats* st) {
  if (!o.ignore_eos && llama_vocab_is_eog(vocab_, tok)) return FinishReason::kStop;
  ++st->n_gen;
  if (o.n_gen_out) o.n_gen_out->store(st->n_gen);
  const int pieces_before = streamer_.pieces();
  const bool shown = shown_ && std::find(shown_->begin(), shown_->end(), tok) != shown_->end();
  if (!streamer_.Push(token_bytes(vocab_, tok, /*special=*/shown))) {
    return streamer_.stop_matched() ? FinishReason::kStop : FinishReason::kCancelled;
  }
  const int32_t yield_ms = control_.governor() ? control_.governor()->YieldMs() : 0;
  if (yield_ms > 0 && streamer_.pieces() != pieces_before) {
    std::this_thread::sleep_for(std::chrono::milliseconds(yield_ms));
  }
  if (st->n_gen >= o.max_tokens) return FinishReason::kLength;
  return FinishReason::kNone;
}

Result<FinishReason> TokenGenerator::Run(
    const Limits& limits, const GenerateOptions& o, Clock::time_point t_start, Stats* st,
    const std::function<Result<bool>(DecodeControl&)>& make_room) {
  Clock::time_point t_first{}, t_last{};
  int32_t n_samples = 0;
  const auto sampled = [&] {
    t_last = Clock::now();
    if (n_samples++ == 0) {
      t_first = t_last;
      st->ttft_ms = std::chrono::duration<double, std::milli>(t_first - t_start).count();
    }
  };
  const auto finish = [&](FinishReason r) -> Result<FinishReason> {
    if (limits.draft) st->spec_draft_ms += limits.draft->TakeMs();
    if (n_samples > 1) {
      st->decode_ms = std::chrono::duration<double, std::milli>(t_last - t_first).count();
      if (st->decode_ms > 0) st->decode_tps = (n_samples - 1) * 1000.0 / st->decode_ms;
    }
    return r;
  };
  Speculator spec(o.speculative, vocab_, limits.n_vocab, limits.can_cut && limits.n_batch > 1,
                  limits.draft, limits.cost, limits.forced_accept);
  std::vector<llama_token> batch;

  if (control_.cancelled()) return finish(FinishReason::kCancelled);
  Result<llama_token> next = sampler_.Sample(control_.context());
  if (!next.ok()) return next.status();
  sampled();
  llama_token tok = *next;  // sampled, not yet decoded
  for (;;) {
    FinishReason reason = Emit(tok, o, st);
    if (reason != FinishReason::kNone) return finish(reason);
    if (control_.n_cached() >= limits.n_ctx) {
      Result<bool> freed = make_room ? make_room(control_) : Result<bool>(false);
      if (!freed.ok()) return freed.status();
      if (!*freed || control_.n_cached() >= limits.n_ctx) {
        return finish(FinishReason::kContextFull);
      }
    }
    control_.Govern();
    if (control_.cancelled()) return finish(FinishReason::kCancelled);

    // The guess, within the context, the batch and max_tokens (the token sampled after the
    // last guess is the last one generated).
    const size_t base = control_.cached().size();
    batch.assign(1, tok);
    int32_t n_forced = 0, n_commit = 0;
    if (spec.enabled()) {
      const int32_t room = std::min({limits.n_ctx - control_.n_cached() - 1,
                                     limits.n_batch - 1, o.max_tokens - st->n_gen - 1});
      if (room > 0) {
        const std::vector<llama_token>& draft =
            spec.Draft(control_.cached(), tok, sampler_, room, control_.threads(), &n_forced,
                       &n_commit);
        batch.insert(batch.end(), draft.begin(), draft.end());
      }
    }
    int32_t k = static_cast<int32_t>(batch.size()) - 1;
    const auto t0 = Clock::now();
    // Logits from the last unchecked token on: the places before it are not sampled.
    Result<FinishReason> r = control_.Decode(batch.data(), k + 1, "decode", k > 0, n_commit);
    if (r.ok() && *r == FinishReason::kContextFull && k > 0) {  // no cells for the guess
      k = n_forced = n_commit = 0;
      r = control_.Decode(&tok, 1, "decode");
    }
    if (!r.ok()) return r.status();
    if (*r != FinishReason::kNone) return finish(*r);
    ++st->decode_calls;
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();

    // The model's tokens at each place, in order: the unchecked forced tokens stay, then a
    // guess stays while it is the one sampled.
    int32_t accepted = 0;
    for (int32_t i = 0; i <= k; ++i) {
      if (i < n_commit) {  // taken unchecked: the guess is the token
        const Status taken = sampler_.Accept(batch[static_cast<size_t>(i) + 1]);
        next = taken.ok() ? Result<llama_token>(batch[static_cast<size_t>(i) + 1])
                          : Result<llama_token>(taken);
      } else {
        next = sampler_.Sample(control_.context(), k > 0 ? i : -1);
      }
      if (!next.ok()) {
        control_.CutTo(base + 1 + static_cast<size_t>(i));
        return next.status();
      }
      sampled();
      if (i < k && *next == batch[static_cast<size_t>(i) + 1]) {
        ++accepted;
        reason = Emit(*next, o, st);
        if (reason != FinishReason::kNone) {
          // The token that stops is not in the cache, as without speculation.
          control_.CutTo(base + 1 + static_cast<size_t>(i));
          break;
        }
        continue;
      }
      tok = *next;
      break;
    }
    spec.Record(k + 1, ms, k, n_forced, accepted, control_.threads(), n_commit);
    st->spec_drafted += k;
    st->spec_accepted += accepted;
    st->spec_forced += std::min(accepted, n_forced);
    if (k > n_forced && spec.last_from_model()) {
      st->spec_draft_drafted += k - n_forced;
      st->spec_draft_accepted += std::max(0, accepted - n_forced);
    }
    if (reason != FinishReason::kNone) return finish(reason);
    if (accepted < k && !control_.CutTo(base + 1 + static_cast<size_t>(accepted))) {
      return Status::Internal("speculative decoding: the KV cache could not drop " +
                              std::to_string(k - accepted) + " rejected tokens");
    }
  }
}

}  // namespace edgellm::engine
