// evaluate_model: greedy exact-match accuracy through the public Session API, then
// perplexity and KL divergence from full logits over the same held-out text.
#include "edgellm/eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "edgellm/model.h"
#include "edgellm/session.h"
#include "edgellm/train.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"

namespace edgellm {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n')) s.pop_back();
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\n')) ++b;
  return s.substr(b);
}

// log-softmax of one row into `out`.
void log_softmax(const float* logits, int32_t n, std::vector<double>* out) {
  out->resize(static_cast<size_t>(n));
  double mx = logits[0];
  for (int32_t i = 1; i < n; ++i) mx = std::max(mx, static_cast<double>(logits[i]));
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(logits[i] - mx);
  const double lse = mx + std::log(sum);
  for (int32_t i = 0; i < n; ++i) (*out)[static_cast<size_t>(i)] = logits[i] - lse;
}

// Full-vocabulary log-probabilities for every position of `toks`, window by window.
struct LogitRunner {
  llama_context* ctx = nullptr;
  int32_t n_ctx = 0, n_vocab = 0;
  ~LogitRunner() {
    if (ctx) llama_free(ctx);
  }
  Status Init(const Model& m, int32_t threads) {
    n_ctx = 256;
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(n_ctx);
    cp.n_batch = cp.n_ubatch = static_cast<uint32_t>(n_ctx);
    if (threads > 0) cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = true;
    ctx = llama_init_from_model(m.impl()->model, cp);
    if (!ctx) return Status::ResourceExhausted("cannot create an evaluation context");
    n_vocab = llama_vocab_n_tokens(m.impl()->vocab);
    return Status::Ok();
  }
  // Rows for positions [0, n-1) of the window: predictions of toks[1..n).
  Status Window(const std::vector<llama_token>& toks, std::vector<float>* rows) {
    engine::kv_clear(ctx);
    const int32_t n = static_cast<int32_t>(toks.size());
    llama_batch b = llama_batch_init(n, 0, 1);
    for (int32_t i = 0; i < n; ++i) {
      b.token[i] = toks[static_cast<size_t>(i)];
      b.pos[i] = i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = i + 1 < n;
    }
    b.n_tokens = n;
    const int rc = llama_decode(ctx, b);
    llama_batch_free(b);
    if (rc != 0) return Status::Internal("llama_decode failed during evaluation");
    rows->resize(static_cast<size_t>(n - 1) * n_vocab);
    for (int32_t i = 0; i + 1 < n; ++i) {
      const float* l = llama_get_logits_ith(ctx, i);
      std::copy(l, l + n_vocab, rows->begin() + static_cast<ptrdiff_t>(i) * n_vocab);
    }
    return Status::Ok();
  }
};

}  // namespace

Result<EvalReport> evaluate_model(const EvalOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  if (o.items < 1 || o.items > 100000) return Status::InvalidArgument("items must be in 1..100000");
  auto model = Model::Load(o.model);
  if (!model.ok()) return model.status();
  SessionOptions so;
  so.n_ctx = 256;
  so.n_threads = o.n_threads;
  so.warmup = false;
  auto session = Session::Create(**model, so);
  if (!session.ok()) return session.status();
  EvalReport rep;
  std::string text;  // held-out items in training format, for perplexity and KL
  for (const std::string& task : o.tasks) {
    auto items = make_task_items(task, Split::kTest, o.items, o.seed);
    if (!items.ok()) return items.status();
    TaskScore sc;
    sc.task = task;
    std::map<std::string, int> answers;
    for (const TaskItem& it : *items) {
      GenerateOptions g;
      g.temperature = 0;
      // Copying answers repeat their prompt: longer than a label or a number.
      g.max_tokens = std::count(copy_tasks().begin(), copy_tasks().end(), task) ? 256 : 32;
      g.chat = true;
      auto out = (*session)->Generate(it.prompt, g);
      if (!out.ok()) return out.status();
      const std::string got = trim(out->text);
      ++sc.n;
      if (got == it.answer) ++sc.correct;
      if (sc.examples.size() < 3) {
        std::string shown = got.substr(0, 80);
        for (size_t p = shown.find('\n'); p != std::string::npos; p = shown.find('\n', p + 2)) {
          shown.replace(p, 1, "\\n");
        }
        sc.examples.push_back(it.prompt + " => " + shown + " (want " + it.answer + ")");
      }
      ++answers[it.answer];
      if (o.on_progress && !o.on_progress(task, sc.n, static_cast<int32_t>(items->size()))) {
        return Status::Cancelled("evaluation cancelled");
      }
    }
    int most = 0;
    for (const auto& [a, c] : answers) most = std::max(most, c);
    sc.accuracy = sc.n ? static_cast<double>(sc.correct) / sc.n : 0;
    sc.chance = sc.n ? static_cast<double>(most) / sc.n : 0;
    rep.tasks.push_back(sc);
    // In training format: each example after BOS.
    for (size_t i = 0; i < items->size() && i < 50; ++i) text += "<s>" + chat_example((*items)[i]);
  }
  (*session).reset();

  // Perplexity (and KL against the reference) over the same tokens.
  auto toks = tokenize((*model)->impl()->vocab, text, /*add_special=*/false, /*parse_special=*/true);
  if (!toks.ok()) return toks.status();
  if (!o.tokens.empty()) toks = o.tokens;
  LogitRunner run;
  EDGELLM_RETURN_IF_ERROR(run.Init(**model, o.n_threads));
  std::unique_ptr<Model> ref_model;
  LogitRunner ref;
  if (!o.reference.empty()) {
    auto r = Model::Load(o.reference);
    if (!r.ok()) return r.status();
    ref_model = std::move(*r);
    if (ref_model->info().n_vocab != (*model)->info().n_vocab) {
      return Status::InvalidArgument("the reference has another vocabulary (" +
                                     std::to_string(ref_model->info().n_vocab) + " vs " +
                                     std::to_string((*model)->info().n_vocab) + " tokens)");
    }
    EDGELLM_RETURN_IF_ERROR(ref.Init(*ref_model, o.n_threads));
  }
  double nll = 0, kl_sum = 0;
  int64_t n = 0, agree = 0;
  std::vector<double> kls;
  std::vector<float> rows, ref_rows;
  std::vector<double> lp, rlp;
  const std::vector<int32_t>& all = *toks;
  for (size_t start = 0; start + 1 < all.size(); start += static_cast<size_t>(run.n_ctx) - 1) {
    const size_t end = std::min(all.size(), start + static_cast<size_t>(run.n_ctx));
    std::vector<llama_token> win(all.begin() + static_cast<ptrdiff_t>(start),
                                 all.begin() + static_cast<ptrdiff_t>(end));
    if (win.size() < 2) break;
    EDGELLM_RETURN_IF_ERROR(run.Window(win, &rows));
    if (ref_model) EDGELLM_RETURN_IF_ERROR(ref.Window(win, &ref_rows));
    for (size_t i = 0; i + 1 < win.size(); ++i) {
      log_softmax(rows.data() + i * run.n_vocab, run.n_vocab, &lp);
      nll -= lp[static_cast<size_t>(win[i + 1])];
      ++n;
      if (ref_model) {
        log_softmax(ref_rows.data() + i * run.n_vocab, run.n_vocab, &rlp);
        double kl = 0;
        size_t am = 0, ram = 0;
        for (size_t v = 0; v < lp.size(); ++v) {
          kl += std::exp(rlp[v]) * (rlp[v] - lp[v]);
          if (lp[v] > lp[am]) am = v;
          if (rlp[v] > rlp[ram]) ram = v;
        }
        kls.push_back(std::max(0.0, kl));
        kl_sum += std::max(0.0, kl);
        agree += am == ram;
      }
    }
  }
  rep.n_tokens = n;
  rep.perplexity = n ? std::exp(nll / n) : 0;
  if (ref_model && n) {
    rep.kl_mean = kl_sum / n;
    std::sort(kls.begin(), kls.end());
    rep.kl_p99 = kls[std::min(kls.size() - 1, static_cast<size_t>(kls.size() * 0.99))];
    rep.top1_agree = static_cast<double>(agree) / n;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace edgellm
