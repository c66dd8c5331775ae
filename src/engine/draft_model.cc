#include "engine/draft_model.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/llama_glue.h"

namespace edgellm::engine {

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kAlpha = 0.15;  // weight of the newest sample in the moving average

bool abort_trampoline(void* data) {
  return static_cast<std::atomic<bool>*>(data)->load(std::memory_order_relaxed);
}

std::string token_name(const llama_vocab* v, llama_token t) {
  if (t == LLAMA_TOKEN_NULL) return "none";
  const char* text = llama_vocab_get_text(v, t);
  return std::to_string(t) + " '" + (text ? text : "") + "'";
}

}  // namespace

Status check_draft_vocab(const Model::Impl& target, const Model::Impl& draft) {
  const std::string who = "draft model " + draft.info.path + " cannot guess for " +
                          target.info.path + ": ";
  const std::string fix = ": use a draft model with the same tokenizer (the same family, e.g. "
                          "Qwen2.5-0.5B for Qwen2.5-1.5B)";
  const llama_vocab* a = target.vocab;
  const llama_vocab* b = draft.vocab;
  if (llama_vocab_type(a) != llama_vocab_type(b)) {
    return Status::InvalidArgument(who + "its vocabulary is " + draft.info.vocab_type +
                                   ", the target's " + target.info.vocab_type + fix);
  }
  const int32_t na = llama_vocab_n_tokens(a), nb = llama_vocab_n_tokens(b);
  if (na != nb) {
    return Status::InvalidArgument(who + "its vocabulary has " + std::to_string(nb) +
                                   " tokens, the target's " + std::to_string(na) + fix);
  }
  if (llama_vocab_bos(a) != llama_vocab_bos(b) || llama_vocab_eos(a) != llama_vocab_eos(b)) {
    return Status::InvalidArgument(who + "its BOS/EOS tokens are " +
                                   token_name(b, llama_vocab_bos(b)) + "/" +
                                   token_name(b, llama_vocab_eos(b)) + ", the target's " +
                                   token_name(a, llama_vocab_bos(a)) + "/" +
                                   token_name(a, llama_vocab_eos(a)) + fix);
  }
  for (llama_token t = 0; t < na; ++t) {
    const char* ta = llama_vocab_get_text(a, t);
    const char* tb = llama_vocab_get_text(b, t);
    if (std::strcmp(ta ? ta : "", tb ? tb : "") != 0) {
      return Status::InvalidArgument(who + "token " + std::to_string(t) + " is '" +
                                     (tb ? tb : "") + "' in it and '" + (ta ? ta : "") +
                                     "' in the target" + fix);
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<DraftModel>> DraftModel::Create(const Model::Impl& draft, int32_t n_ctx,
                                                       int32_t n_batch, int32_t n_threads,
                                                       uint64_t target_weight_bytes, bool warmup,
                                                       std::atomic<bool>* cancel) {
  std::unique_ptr<DraftModel> d(new DraftModel());
  d->model_ = &draft;
  d->n_ctx_ = n_ctx;
  d->n_batch_ = n_batch;
  d->n_threads_ = d->cur_threads_ = n_threads;
  d->cancel_ = cancel;
  if (target_weight_bytes > 0) {  // decode reads every weight once: bytes, not parameters
    d->relative_guess_ = std::max(0.05, static_cast<double>(draft.info.weights_bytes) /
                                            static_cast<double>(target_weight_bytes));
  }
  EDGELLM_RETURN_IF_ERROR(d->EnsureContext());
  if (warmup) {  // touch the weights now, not in the first guess
    llama_token t = llama_vocab_bos(draft.vocab);
    if (t == LLAMA_TOKEN_NULL) t = 0;
    llama_decode(d->ctx_, llama_batch_get_one(&t, 1));
    kv_clear(d->ctx_);
  }
  return d;
}

DraftModel::~DraftModel() { Release(); }

void DraftModel::Release() {
  if (ctx_) llama_free(ctx_);
  ctx_ = nullptr;
  cached_.clear();
}

Status DraftModel::EnsureContext() {
  if (ctx_) return Status::Ok();
  llama_context_params cp = context_params(n_ctx_, n_batch_, n_threads_, GGML_TYPE_F16);
  cp.abort_callback = abort_trampoline;
  cp.abort_callback_data = cancel_;
  take_llama_errors();
  try {
    ctx_ = llama_init_from_model(model_->model, cp);
  } catch (const std::exception&) {
    ctx_ = nullptr;
  }
  if (!ctx_) {
    const std::string why = take_llama_errors();
    return Status::ResourceExhausted("could not create the draft model's context (n_ctx " +
                                     std::to_string(n_ctx_) + ")" +
                                     (why.empty() ? "" : ": " + why) +
                                     ": use a smaller --ctx or no draft model");
  }
  cur_threads_ = n_threads_;
  cached_.clear();
  return Status::Ok();
}

double DraftModel::TakeMs() {
  const double ms = spent_ms_;
  spent_ms_ = 0;
  return ms;
}

const std::vector<llama_token>& DraftModel::Guess(const std::vector<llama_token>& history,
                                                  int32_t n, float p_min, int32_t n_threads) {
  out_.clear();
  const int32_t n_vocab = model_->info.n_vocab;
  const int64_t size = static_cast<int64_t>(history.size());
  n = static_cast<int32_t>(std::min<int64_t>(n, n_ctx_ - size));
  if (n <= 0 || size == 0) return out_;
  for (llama_token t : history) {
    if (t < 0 || t >= n_vocab) return out_;  // media: the draft model cannot see it
  }
  if (!EnsureContext().ok()) return out_;
  if (n_threads != cur_threads_ && n_threads > 0) {
    llama_set_n_threads(ctx_, n_threads, n_threads);
    cur_threads_ = n_threads;
  }
  const auto t0 = Clock::now();
  // Keep what the two caches share, never all of history: its last token is decoded again for
  // the logits that guess the next.
  size_t keep = 0;
  while (keep < cached_.size() && keep + 1 < history.size() && cached_[keep] == history[keep]) {
    ++keep;
  }
  if (keep < cached_.size()) {
    if (!kv_remove(ctx_, static_cast<int32_t>(keep), -1)) {
      kv_clear(ctx_);
      keep = 0;
    }
    cached_.resize(keep);
  }
  const auto fail = [&] {
    kv_clear(ctx_);
    cached_.clear();
  };
  // The per-token cost is measured on one-token decodes only: the first guess of a
  // generation catches up on the whole prompt, a prefill, not a guess's cost.
  const auto sample = [&](double ms) {
    token_ms_ = token_ms_ == 0 ? ms : token_ms_ + kAlpha * (ms - token_ms_);
  };
  const size_t behind = history.size() - keep;
  for (size_t i = keep; i < history.size(); i += static_cast<size_t>(n_batch_)) {
    const int32_t m = static_cast<int32_t>(std::min<size_t>(n_batch_, history.size() - i));
    llama_token* toks = const_cast<llama_token*>(history.data() + i);
    if (llama_decode(ctx_, llama_batch_get_one(toks, m)) != 0) {
      fail();
      spent_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
      return out_;
    }
    cached_.insert(cached_.end(), toks, toks + m);
  }
  auto t_step = Clock::now();
  if (behind <= 2) sample(std::chrono::duration<double, std::milli>(t_step - t0).count());
  for (;;) {
    const float* logits = llama_get_logits_ith(ctx_, -1);
    if (!logits) break;
    int32_t best = 0;
    for (int32_t t = 1; t < n_vocab; ++t) {
      if (logits[t] > logits[best]) best = t;
    }
    double sum = 0;
    for (int32_t t = 0; t < n_vocab; ++t) {
      sum += std::exp(static_cast<double>(logits[t] - logits[best]));
    }
    if (1.0 / sum < p_min || llama_vocab_is_eog(model_->vocab, best)) break;
    out_.push_back(best);
    if (static_cast<int32_t>(out_.size()) >= n) break;
    llama_token t = best;
    if (llama_decode(ctx_, llama_batch_get_one(&t, 1)) != 0) {
      fail();
      break;
    }
    cached_.push_back(t);
    const auto now = Clock::now();
    sample(std::chrono::duration<double, std::milli>(now - t_step).count());
    t_step = now;
  }
  spent_ms_ += std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  return out_;
}

}  // namespace edgellm::engine
