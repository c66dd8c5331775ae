// Session::Impl::Generate: prompt -> chunked prefill -> sample/decode loop -> streamed text.
#include <algorithm>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "core/sys.h"
#include "engine/llama_glue.h"
#include "engine/sampler.h"
#include "engine/session_impl.h"
#include "engine/streamer.h"

namespace edgellm {
namespace {

using Clock = std::chrono::steady_clock;

// What a non-zero llama_decode result means for the generation.
Status decode_status(int32_t rc, const char* phase, FinishReason* reason) {
  if (rc == 2) {
    *reason = FinishReason::kCancelled;
    return Status::Ok();
  }
  if (rc == 1) {
    *reason = FinishReason::kContextFull;
    return Status::Ok();
  }
  const std::string why = engine::take_llama_errors();
  return Status::Internal(std::string("llama_decode failed during ") + phase + " (code " +
                          std::to_string(rc) + ")" + (why.empty() ? "" : ": " + why));
}

llama_token argmax_logits(llama_context* ctx, int32_t n_vocab) {
  const float* logits = llama_get_logits_ith(ctx, -1);
  int32_t best = 0;
  for (int32_t i = 1; i < n_vocab; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

// Keeps the leading BOS (if any) and the most recent tokens, leaving room to generate.
void truncate_front(std::vector<llama_token>* toks, int32_t keep, llama_token bos) {
  const bool has_bos = !toks->empty() && bos != LLAMA_TOKEN_NULL && (*toks)[0] == bos;
  const size_t head = has_bos ? 1 : 0;
  const size_t drop = toks->size() - static_cast<size_t>(keep);
  toks->erase(toks->begin() + static_cast<std::ptrdiff_t>(head),
              toks->begin() + static_cast<std::ptrdiff_t>(head + drop));
}

}  // namespace

Result<Generation> Session::Impl::Generate(std::string_view prompt, const GenerateOptions& o,
                                           const TextSink& sink) {
  const auto t_start = Clock::now();
  cancel.store(false);
  if (prompt.empty()) {
    return Status::InvalidArgument("prompt is empty: pass the text to continue or answer");
  }
  EDGELLM_RETURN_IF_ERROR(engine::validate_sampling(o));

  std::string text(prompt);
  if (o.chat) {
    Result<std::string> formatted = format_chat(model->model, prompt, o.system_prompt, o.history);
    if (!formatted.ok()) return formatted.status();
    text = std::move(formatted.value());
  }
  Result<std::vector<int32_t>> tokenized =
      tokenize(model->vocab, text, /*add_special=*/true, /*parse_special=*/o.chat);
  if (!tokenized.ok()) return tokenized.status();
  std::vector<llama_token> toks(tokenized->begin(), tokenized->end());
  if (toks.empty()) return Status::InvalidArgument("prompt produced no tokens");

  Generation gen;
  Stats& st = gen.stats;
  st.load_ms = model->info.load_ms;
  st.warmup_ms = warmup_ms;
  st.n_threads = options.n_threads;
  st.n_ctx = options.n_ctx;
  st.n_batch = options.n_batch;

  const int32_t n_ctx = options.n_ctx;
  if (static_cast<int32_t>(toks.size()) >= n_ctx) {
    if (!o.truncate_prompt) {
      return Status::InvalidArgument(
          "prompt is " + std::to_string(toks.size()) + " tokens but the context holds " +
          std::to_string(n_ctx) + ": use a larger --ctx, a shorter prompt, or enable truncation");
    }
    const int32_t room = std::max(std::min(o.max_tokens, n_ctx / 2), n_ctx / 4);
    truncate_front(&toks, n_ctx - room, llama_vocab_bos(model->vocab));
    st.prompt_truncated = true;
  }
  const int32_t n_prompt = static_cast<int32_t>(toks.size());

  EDGELLM_RETURN_IF_ERROR(EnsureContext());
  llama_memory_clear(llama_get_memory(ctx), true);
  // Plain greedy needs no candidate array: an argmax over the logits saves rebuilding a
  // vocabulary-sized (151,936 entries for Qwen2) array on every token.
  const bool greedy_fast = o.temperature <= 0 && (o.repeat_penalty == 1.0f || o.repeat_last_n == 0);
  engine::SamplerPtr sampler = greedy_fast ? nullptr : engine::make_sampler(o, model->info.n_vocab);

  // Governor: pause, thermal thread count; applied between llama_decode calls only.
  int32_t cur_threads = options.n_threads;
  llama_set_n_threads(ctx, cur_threads, cur_threads);  // undo the last call's throttle
  st.min_threads = cur_threads;
  auto govern = [&] {
    if (!o.governor) return;
    st.paused_ms += o.governor->WaitWhilePaused(cancel);
    const int32_t want = o.governor->ThreadsFor(options.n_threads);
    if (want != cur_threads) {
      llama_set_n_threads(ctx, want, want);
      cur_threads = want;
      ++st.thread_changes;
      st.min_threads = std::min(st.min_threads, cur_threads);
    }
  };

  // Prefill in chunks of n_batch so the compute buffer stays bounded on long prompts.
  FinishReason reason = FinishReason::kNone;
  const auto t_prefill = Clock::now();
  for (int32_t i = 0; i < n_prompt && reason == FinishReason::kNone; i += options.n_batch) {
    if (cancel.load()) {
      reason = FinishReason::kCancelled;
      break;
    }
    govern();
    const int32_t n = std::min(options.n_batch, n_prompt - i);
    const int32_t rc = llama_decode(ctx, llama_batch_get_one(toks.data() + i, n));
    if (rc != 0) {
      EDGELLM_RETURN_IF_ERROR(decode_status(rc, "prefill", &reason));
      break;
    }
    st.n_prompt = i + n;
    if (o.on_prefill && !o.on_prefill(i + n, n_prompt)) reason = FinishReason::kCancelled;
  }
  st.prefill_ms = ms_since(t_prefill);
  if (st.prefill_ms > 0) st.prefill_tps = st.n_prompt * 1000.0 / st.prefill_ms;

  TextStreamer streamer(sink, o.stop, o.stream_every_tokens, o.stream_every_ms);
  Clock::time_point t_first{}, t_last{};
  int32_t n_past = n_prompt;
  int32_t n_decoded = 0, n_decoded_at_last = 0;
  while (reason == FinishReason::kNone) {
    if (cancel.load()) {
      reason = FinishReason::kCancelled;
      break;
    }
    llama_token tok = greedy_fast ? argmax_logits(ctx, model->info.n_vocab)
                                  : llama_sampler_sample(sampler.get(), ctx, -1);
    t_last = Clock::now();
    n_decoded_at_last = n_decoded;
    if (st.n_gen == 0) {
      t_first = t_last;
      st.ttft_ms = std::chrono::duration<double, std::milli>(t_first - t_start).count();
    }
    if (!o.ignore_eos && llama_vocab_is_eog(model->vocab, tok)) {
      reason = FinishReason::kStop;
      break;
    }
    ++st.n_gen;
    if (o.n_gen_out) o.n_gen_out->store(st.n_gen);
    const int pieces_before = streamer.pieces();
    if (!streamer.Push(token_bytes(model->vocab, tok))) {
      reason = streamer.stop_matched() ? FinishReason::kStop : FinishReason::kCancelled;
      break;
    }
    if (o.governor && o.governor->options().yield_ms > 0 && streamer.pieces() != pieces_before) {
      std::this_thread::sleep_for(std::chrono::milliseconds(o.governor->options().yield_ms));
    }
    if (st.n_gen >= o.max_tokens) {
      reason = FinishReason::kLength;
      break;
    }
    if (n_past >= n_ctx) {
      reason = FinishReason::kContextFull;
      break;
    }
    govern();
    if (cancel.load()) {
      reason = FinishReason::kCancelled;
      break;
    }
    const int32_t rc = llama_decode(ctx, llama_batch_get_one(&tok, 1));
    if (rc != 0) {
      EDGELLM_RETURN_IF_ERROR(decode_status(rc, "decode", &reason));
      break;
    }
    ++n_past;
    ++n_decoded;
  }
  if (!streamer.Finish() && reason != FinishReason::kStop) reason = FinishReason::kCancelled;
  if (streamer.stop_matched()) reason = FinishReason::kStop;

  if (n_decoded_at_last > 0) {
    st.decode_ms = std::chrono::duration<double, std::milli>(t_last - t_first).count();
    if (st.decode_ms > 0) st.decode_tps = n_decoded_at_last * 1000.0 / st.decode_ms;
  }
  st.peak_rss_bytes = peak_rss_bytes();
  gen.text = streamer.text();
  gen.finish_reason = reason;
  return gen;
}

}  // namespace edgellm
