// Session::Impl::Generate: the prompt's tokens, then TextPrefiller (chunked prefill) and
// TokenGenerator (sample -> stream -> decode), then the stats.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "core/sys.h"
#include "engine/constraint.h"
#include "engine/decode_control.h"
#include "engine/reply_stream.h"
#include "engine/llama_glue.h"
#include "engine/media.h"
#include "engine/sampler.h"
#include "engine/speculator.h"
#include "engine/session_impl.h"
#include "engine/streamer.h"
#include "engine/text_prefiller.h"
#include "engine/token_generator.h"

namespace edgellm {
namespace {

using Clock = std::chrono::steady_clock;

// Keeps the leading BOS (if any) and the most recent tokens, leaving room to generate.
void truncate_front(std::vector<llama_token>* toks, int32_t keep, llama_token bos) {
  const bool has_bos = !toks->empty() && bos != LLAMA_TOKEN_NULL && (*toks)[0] == bos;
  const size_t head = has_bos ? 1 : 0;
  const size_t drop = toks->size() - static_cast<size_t>(keep);
  toks->erase(toks->begin() + static_cast<std::ptrdiff_t>(head),
              toks->begin() + static_cast<std::ptrdiff_t>(head + drop));
}

}  // namespace

Result<std::vector<llama_token>> Session::Impl::PromptTokens(std::string_view prompt,
                                                             const GenerateOptions& o) const {
  std::string text(prompt);
  if (o.chat) {
    Result<std::string> formatted = format_chat(model, prompt, o.system_prompt, o.history);
    if (!formatted.ok()) return formatted.status();
    text = std::move(formatted.value());
  }
  Result<std::vector<int32_t>> tokenized =
      tokenize(model->vocab, text, /*add_special=*/true, /*parse_special=*/o.chat);
  if (!tokenized.ok()) return tokenized.status();
  return std::vector<llama_token>(tokenized->begin(), tokenized->end());
}

Status Session::Impl::FitPrompt(std::vector<llama_token>* toks, const GenerateOptions& o,
                                Stats* st) const {
  const int32_t n_ctx = options.n_ctx;
  if (static_cast<int32_t>(toks->size()) < n_ctx) return Status::Ok();
  if (!o.truncate_prompt) {
    return Status::InvalidArgument(
        "prompt is " + std::to_string(toks->size()) + " tokens but the context holds " +
        std::to_string(n_ctx) + ": use a larger --ctx, a shorter prompt, or enable truncation");
  }
  const int32_t room = std::max(std::min(o.max_tokens, n_ctx / 2), n_ctx / 4);
  truncate_front(toks, n_ctx - room, llama_vocab_bos(model->vocab));
  st->prompt_truncated = true;
  return Status::Ok();
}

Result<Generation> Session::Impl::Generate(std::string_view prompt, const GenerateOptions& o,
                                           const TextSink& sink) {
  const auto t_start = Clock::now();
  cancel.store(false);
  const bool after_tool = prompt.empty() && o.chat && !o.history.empty() &&
                          o.history.back().role == "tool";
  if (!o.media.empty() || engine::has_media(o.history)) {
    return GenerateWithMedia(prompt, o, sink, t_start);
  }
  if (prompt.empty() && !after_tool) {
    return Status::InvalidArgument("prompt is empty: pass the text to continue or answer");
  }
  if (!o.tools.empty() && !o.chat) {
    return Status::InvalidArgument("tools need chat mode: set chat (the model's template "
                                   "renders the tools)");
  }
  if (o.chat && (!o.tools.empty() || after_tool || wants_reply_parser(model, o))) {
    Result<engine::ChatRender> render = RenderChat(prompt, o);
    if (!render.ok()) return render.status();
    Result<std::vector<int32_t>> tokenized =
        tokenize(model->vocab, render->prompt, /*add_special=*/true, /*parse_special=*/true);
    if (!tokenized.ok()) return tokenized.status();
    return Run(std::vector<llama_token>(tokenized->begin(), tokenized->end()), o, sink, {},
               t_start, &*render);
  }
  Result<std::vector<llama_token>> tokens = PromptTokens(prompt, o);
  if (!tokens.ok()) return tokens.status();
  return Run(std::move(tokens).value(), o, sink, {}, t_start);
}

int32_t Session::Impl::KeepPrefix(const std::vector<llama_token>& tokens) {
  size_t keep = 0;
  const size_t limit = std::min(cached.size(), tokens.size() - 1);
  while (keep < limit && cached[keep] == tokens[keep]) ++keep;
  if (keep < cached.size()) {
    if (engine::cut_cache(ctx, &cached, &kv_pos, keep)) {
      keep = cached.size();  // under M-RoPE, a media chunk cut inside goes whole
    } else {  // the memory cannot cut a sequence (recurrent models): start again
      ClearKv();
      keep = 0;
    }
  }
  return static_cast<int32_t>(keep);
}

Result<Generation> Session::Impl::Run(std::vector<llama_token> toks, const GenerateOptions& o,
                                      const TextSink& sink, const MakeRoom& make_room,
                                      Clock::time_point t_start,
                                      const engine::ChatRender* render,
                                      const engine::MediaPrompt* media) {
  cancel.store(false);
  EDGELLM_RETURN_IF_ERROR(engine::validate_sampling(o));
  EDGELLM_RETURN_IF_ERROR(engine::validate_speculative(o.speculative));
  if (toks.empty()) return Status::InvalidArgument("prompt produced no tokens");
  Generation gen;
  Stats& st = gen.stats;
  st.load_ms = model->info.load_ms;
  st.warmup_ms = warmup_ms;
  st.n_threads = options.n_threads;
  st.n_ctx = options.n_ctx;
  st.n_batch = options.n_batch;
  if (media) {
    st.n_media = media->n_media;
    st.n_media_tokens = media->n_media_tokens;
    st.media_decode_ms = media->decode_ms;
    if (static_cast<int32_t>(toks.size()) >= options.n_ctx) {  // never cut through media
      return Status::InvalidArgument(
          "the prompt with its media is " + std::to_string(toks.size()) + " tokens (" +
          std::to_string(media->n_media_tokens) + " of them media) but the context holds " +
          std::to_string(options.n_ctx) + ": use a larger context, fewer or smaller images, "
          "or a lower image_max_tokens");
    }
  }
  EDGELLM_RETURN_IF_ERROR(FitPrompt(&toks, o, &st));
  engine::TokenSampler sampler(o, model->info.n_vocab);
  EDGELLM_RETURN_IF_ERROR(engine::apply_constraint(model, o, &sampler, &st));
  if (render && !render->grammar.gbnf.empty()) {
    if (sampler.constrained()) {
      return Status::InvalidArgument("tools cannot be combined with a grammar or a JSON schema "
                                     "(the tool calls have their own grammar)");
    }
    EDGELLM_RETURN_IF_ERROR(engine::apply_tool_grammar(model, *render, &sampler, &st));
  }

  EDGELLM_RETURN_IF_ERROR(EnsureContext());
  if (o.reuse_prefix) {
    st.n_cached = KeepPrefix(toks);
  } else {
    ClearKv();
  }
  engine::DecodeControl control(ctx, options.n_threads, o.governor, cancel, &st, &cached,
                               &kv_pos);

  const auto t_prefill = Clock::now();
  // The prompt's media, for this prefill and for a context shift that decodes kept media
  // cells again (DropCached).
  struct Active {
    Session::Impl* s;
    ~Active() { s->active_media = nullptr; s->active_stats = nullptr; }
  } active{this};
  active_media = media;
  active_stats = &st;
  engine::TextPrefiller prefiller(control, options.n_batch, MediaEvalFor(control));
  Result<FinishReason> reason =
      prefiller.Prefill(toks.data() + st.n_cached, static_cast<int32_t>(toks.size()) - st.n_cached,
                        o.on_prefill, &st.n_prompt);
  if (!reason.ok()) return reason.status();
  st.prefill_ms = ms_since(t_prefill);
  if (st.prefill_ms > 0) st.prefill_tps = st.n_prompt * 1000.0 / st.prefill_ms;

  // A chat turn with tools or reasoning: the raw text goes through the format's parser, the
  // answer to the sink.
  std::optional<engine::ReplyStream> reply;
  std::vector<std::string> stops = o.stop;
  if (render) stops.insert(stops.end(), render->stops.begin(), render->stops.end());
  if (render && render->parse) reply.emplace(*render->parser, o, sink);
  TextStreamer streamer(reply ? reply->raw_sink() : sink, std::move(stops), o.stream_every_tokens,
                        o.stream_every_ms);
  // The format's special tokens (<tool_call>, </think>) reach the parser as text.
  std::vector<llama_token> shown;
  if (render) {
    for (const std::string& s : render->preserved_tokens) {
      Result<std::vector<int32_t>> t = tokenize(model->vocab, s, false, /*parse_special=*/true);
      if (t.ok() && t->size() == 1) shown.push_back((*t)[0]);
    }
  }
  if (*reason == FinishReason::kNone) {
    engine::TokenGenerator generator(model->vocab, control, sampler, streamer, &shown);
    engine::TokenGenerator::Limits limits;
    limits.n_ctx = options.n_ctx;
    limits.n_batch = options.n_batch;
    limits.n_vocab = model->info.n_vocab;
    limits.can_cut = engine::kv_can_cut_tail(model->model);
    if (o.speculative.draft) limits.draft = draft.get();
    limits.cost = &decode_cost;
    limits.forced_accept = &forced_accept;
    reason = generator.Run(limits, o, t_start, &st, make_room);
    if (!reason.ok()) return reason.status();
  }
  FinishReason finish = *reason;
  if (!streamer.Finish() && finish != FinishReason::kStop) finish = FinishReason::kCancelled;
  if (streamer.stop_matched()) finish = FinishReason::kStop;

  st.peak_rss_bytes = peak_rss_bytes();
  gen.text = streamer.text();
  gen.finish_reason = finish;
  if (reply && !reply->Finish(&gen) && gen.finish_reason == FinishReason::kStop) {
    gen.finish_reason = FinishReason::kCancelled;
  }
  st.grammar_resamples = sampler.resamples();
  engine::finish_json(o, streamer.stop_matched(), &gen);
  return gen;
}

Result<Stats> Session::Impl::Prefill(const std::vector<llama_token>& tokens) {
  cancel.store(false);
  Stats st;
  st.n_threads = options.n_threads;
  st.n_ctx = options.n_ctx;
  st.n_batch = options.n_batch;
  if (tokens.empty()) return st;
  if (static_cast<int32_t>(tokens.size()) >= options.n_ctx) {
    return Status::InvalidArgument("the prompt to prepare is " + std::to_string(tokens.size()) +
                                   " tokens but the context holds " +
                                   std::to_string(options.n_ctx) + ": use a larger --ctx");
  }
  EDGELLM_RETURN_IF_ERROR(EnsureContext());
  // KeepPrefix leaves the last token out for its logits; a prefill wants none of them.
  std::vector<llama_token> probe = tokens;
  probe.push_back(LLAMA_TOKEN_NULL);
  st.n_cached = KeepPrefix(probe);
  engine::DecodeControl control(ctx, options.n_threads, nullptr, cancel, &st, &cached, &kv_pos);
  engine::TextPrefiller prefiller(control, options.n_batch);
  const auto t0 = Clock::now();
  Result<FinishReason> r =
      prefiller.Prefill(tokens.data() + st.n_cached,
                        static_cast<int32_t>(tokens.size()) - st.n_cached, {}, &st.n_prompt);
  if (!r.ok()) return r.status();
  st.prefill_ms = ms_since(t0);
  if (st.prefill_ms > 0) st.prefill_tps = st.n_prompt * 1000.0 / st.prefill_ms;
  if (*r == FinishReason::kCancelled) return Status::Cancelled("prefill cancelled");
  if (*r != FinishReason::kNone) {
    return Status::ResourceExhausted("the context filled while preparing the prompt");
  }
  return st;
}

engine::MediaEval Session::Impl::MediaEvalFor(engine::DecodeControl& control) {
  if (!active_media || !model->media) return {};
  return [this, &control](const llama_token* t, int32_t avail, int32_t* n) {
    return engine::eval_media(*model->media, *active_media, llama_model_n_embd_inp(model->model),
                              t, avail, options.n_batch, control, active_stats, n);
  };
}

bool Session::Impl::can_shift() const {
  return options.context_shift && ctx && engine::kv_can_shift(ctx);
}

Result<bool> Session::Impl::DropCached(int32_t p0, int32_t p1, engine::DecodeControl* control) {
  const int32_t n = static_cast<int32_t>(cached.size());
  if (p0 < 0 || p1 <= p0 || p1 > n) return false;
  if (can_shift()) {  // never under M-RoPE (llama.cpp cannot shift it): positions are indices
    if (!engine::kv_remove(ctx, p0, p1)) return false;
    engine::kv_shift(ctx, p1, -(p1 - p0));
    cached.erase(cached.begin() + p0, cached.begin() + p1);
    kv_pos.Identity(cached.size());
    return true;
  }
  if (!control) return false;
  // No shift: cut at p0 and decode the kept tail again at its new positions.
  const std::vector<llama_token> tail(cached.begin() + p1, cached.end());
  if (engine::has_media(tail) && !active_media) return false;
  if (!engine::cut_cache(ctx, &cached, &kv_pos, static_cast<size_t>(p0))) return false;
  if (cached.size() != static_cast<size_t>(p0)) return false;  // p0 inside an M-RoPE chunk
  engine::TextPrefiller prefiller(*control, options.n_batch, MediaEvalFor(*control));
  int32_t done = 0;
  Result<FinishReason> r =
      prefiller.Prefill(tail.data(), static_cast<int32_t>(tail.size()), {}, &done);
  if (!r.ok()) return r.status();
  return *r == FinishReason::kNone;
}

}  // namespace edgellm
