#include "engine/token_generator.h"

#include <algorithm>
#include <thread>

#include "engine/model_impl.h"

namespace edgellm::engine {

using Clock = std::chrono::steady_clock;

Result<FinishReason> TokenGenerator::Run(
    int32_t n_ctx, const GenerateOptions& o, Clock::time_point t_start, Stats* st,
    const std::function<Result<bool>(DecodeControl&)>& make_room) {
  Clock::time_point t_first{}, t_last{};
  int32_t n_decoded = 0, n_decoded_at_last = 0;
  FinishReason reason = FinishReason::kNone;
  while (reason == FinishReason::kNone) {
    if (control_.cancelled()) {
      reason = FinishReason::kCancelled;
      break;
    }
    Result<llama_token> sampled = sampler_.Sample(control_.context());
    if (!sampled.ok()) return sampled.status();
    llama_token tok = *sampled;
    t_last = Clock::now();
    n_decoded_at_last = n_decoded;
    if (st->n_gen == 0) {
      t_first = t_last;
      st->ttft_ms = std::chrono::duration<double, std::milli>(t_first - t_start).count();
    }
    if (!o.ignore_eos && llama_vocab_is_eog(vocab_, tok)) {
      reason = FinishReason::kStop;
      break;
    }
    ++st->n_gen;
    if (o.n_gen_out) o.n_gen_out->store(st->n_gen);
    const int pieces_before = streamer_.pieces();
    const bool shown =
        shown_ && std::find(shown_->begin(), shown_->end(), tok) != shown_->end();
    if (!streamer_.Push(token_bytes(vocab_, tok, /*special=*/shown))) {
      reason = streamer_.stop_matched() ? FinishReason::kStop : FinishReason::kCancelled;
      break;
    }
    const int32_t yield_ms = control_.governor() ? control_.governor()->YieldMs() : 0;
    if (yield_ms > 0 && streamer_.pieces() != pieces_before) {
      std::this_thread::sleep_for(std::chrono::milliseconds(yield_ms));
    }
    if (st->n_gen >= o.max_tokens) {
      reason = FinishReason::kLength;
      break;
    }
    if (control_.n_cached() >= n_ctx) {
      Result<bool> freed = make_room ? make_room(control_) : Result<bool>(false);
      if (!freed.ok()) return freed.status();
      if (!*freed || control_.n_cached() >= n_ctx) {
        reason = FinishReason::kContextFull;
        break;
      }
    }
    control_.Govern();
    if (control_.cancelled()) {
      reason = FinishReason::kCancelled;
      break;
    }
    Result<FinishReason> r = control_.Decode(&tok, 1, "decode");
    if (!r.ok()) return r.status();
    reason = *r;
    if (reason != FinishReason::kNone) break;
    ++n_decoded;
  }
  if (n_decoded_at_last > 0) {
    st->decode_ms = std::chrono::duration<double, std::milli>(t_last - t_first).count();
    if (st->decode_ms > 0) st->decode_tps = n_decoded_at_last * 1000.0 / st->decode_ms;
  }
  return reason;
}

}  // namespace edgellm::engine
