// edgellm's own training graph (the default path): the llama architecture's forward pass
// built with ggml directly, trained with ggml-opt's AdamW on windows that start at examples,
// with answer-weighted loss; optionally with weight gradients through OpenBLAS (--blas).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "edgellm/session.h"
#include "engine/gguf_io.h"
#include "ggml-backend.h"
#if defined(EDGELLM_TRAIN_BLAS)
#include "ggml-blas.h"
#endif
#include "ggml-cpu.h"
#include "train/train_internal.h"

namespace edgellm::train {
namespace {

// The training forward graph, built with ggml directly: the same computation as llama.cpp's
// llama architecture at inference (RMSNorm eps 1e-5, RoPE NORM base 10000, causal softmax
// attention scaled by 1/sqrt(head_dim), SwiGLU, tied output), but attention reads K and V
// straight from their projections, not from a KV cache, so every weight gets a gradient.
ggml_tensor* build_forward(ggml_context* c, const TrainOptions& o,
                           const std::map<std::string, ggml_tensor*>& w, ggml_tensor* tokens,
                           ggml_tensor* pos) {
  const int64_t T = tokens->ne[0], E = o.n_embd, H = o.n_head, hd = E / H;
  const float eps = 1e-5f;
  auto W = [&](const std::string& n) { return w.at(n); };
  ggml_tensor* x = ggml_get_rows(c, W("token_embd.weight"), tokens);  // [E, T]
  for (int l = 0; l < o.n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    ggml_tensor* h = ggml_mul(c, ggml_rms_norm(c, x, eps), W(b + "attn_norm.weight"));
    ggml_tensor* q = ggml_reshape_3d(c, ggml_mul_mat(c, W(b + "attn_q.weight"), h), hd, H, T);
    ggml_tensor* k = ggml_reshape_3d(c, ggml_mul_mat(c, W(b + "attn_k.weight"), h), hd, H, T);
    ggml_tensor* v = ggml_reshape_3d(c, ggml_mul_mat(c, W(b + "attn_v.weight"), h), hd, H, T);
    q = ggml_rope_ext(c, q, pos, nullptr, static_cast<int>(hd), 0, o.n_ctx, 10000.0f, 1.0f, 0.0f,
                      1.0f, 32.0f, 1.0f);
    k = ggml_rope_ext(c, k, pos, nullptr, static_cast<int>(hd), 0, o.n_ctx, 10000.0f, 1.0f, 0.0f,
                      1.0f, 32.0f, 1.0f);
    ggml_tensor* Q = ggml_permute(c, q, 0, 2, 1, 3);                 // [hd, T, H]
    ggml_tensor* K = ggml_cont(c, ggml_permute(c, k, 0, 2, 1, 3));   // [hd, T, H]
    ggml_tensor* kq = ggml_mul_mat(c, K, Q);                         // [T(k), T(q), H]
    kq = ggml_scale(c, kq, 1.0f / std::sqrt(static_cast<float>(hd)));
    kq = ggml_diag_mask_inf(c, kq, 0);
    kq = ggml_soft_max(c, kq);
    ggml_tensor* V = ggml_cont(c, ggml_permute(c, v, 1, 2, 0, 3));   // [T, hd, H]
    ggml_tensor* kqv = ggml_mul_mat(c, V, kq);                       // [hd, T(q), H]
    ggml_tensor* merged = ggml_cont(c, ggml_permute(c, kqv, 0, 2, 1, 3));  // [hd, H, T]
    merged = ggml_reshape_2d(c, merged, E, T);
    x = ggml_add(c, x, ggml_mul_mat(c, W(b + "attn_output.weight"), merged));
    h = ggml_mul(c, ggml_rms_norm(c, x, eps), W(b + "ffn_norm.weight"));
    ggml_tensor* g = ggml_silu(c, ggml_mul_mat(c, W(b + "ffn_gate.weight"), h));
    ggml_tensor* u = ggml_mul_mat(c, W(b + "ffn_up.weight"), h);
    x = ggml_add(c, x, ggml_mul_mat(c, W(b + "ffn_down.weight"), ggml_mul(c, g, u)));
  }
  x = ggml_mul(c, ggml_rms_norm(c, x, eps), W("output_norm.weight"));
  return ggml_mul_mat(c, W("token_embd.weight"), x);  // [V, T]
}

}  // namespace

Status train_direct(const TrainOptions& o, const Vocab& v, const std::vector<llama_token>& toks,
                    Recorder* rec, TrainReport* report) {
  const int64_t T = o.n_ctx, V = static_cast<int64_t>(v.tokens.size());
  // Windows start at example starts (BOS), so examples are seen at the start of a context as
  // every prompt is at inference; a window runs on into its last example, and the next window
  // starts at that example.
  std::vector<int64_t> starts;
  {
    std::vector<int64_t> bos;
    for (size_t i = 0; i < toks.size(); ++i) {
      if (toks[i] == v.bos) bos.push_back(static_cast<int64_t>(i));
    }
    const int64_t n = static_cast<int64_t>(toks.size());
    size_t b = 0;
    while (b < bos.size() && bos[b] + T + 1 <= n) {
      starts.push_back(bos[b]);
      size_t next = b + 1;
      while (next + 1 < bos.size() && bos[next + 1] < bos[b] + T) ++next;
      b = next;
    }
  }
  const int64_t ndata = static_cast<int64_t>(starts.size());
  if (ndata < 2) return Status::InvalidArgument("the corpus is too small for two windows");
  // Which tokens are answers (after the second <|im_start|> of an example and its role line,
  // through <|im_end|>). As targets, answers always count; any other token counts with
  // probability prompt_loss_weight, drawn per window and position (see the mask below).
  std::vector<uint8_t> answer_tok(toks.size(), 0);
  {
    int32_t newline = -1;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
      if (v.tokens[i] == "\n" || (newline < 0 && v.tokens[i] == "<0x0A>")) newline = static_cast<int32_t>(i);
    }
    int starts_seen = 0;
    bool role_line = false, answer = false;
    for (size_t i = 0; i < toks.size(); ++i) {
      const llama_token t = toks[i];
      if (t == v.bos) {
        starts_seen = 0;
        role_line = answer = false;
      } else if (t == v.im_start) {
        role_line = ++starts_seen == 2;
      } else if (role_line) {
        if (t == newline) {
          role_line = false;
          answer = true;
        }
      } else if (answer) {
        answer_tok[i] = 1;
        if (t == v.im_end) answer = false;
      }
    }
  }
  const int64_t split = std::max<int64_t>(1, static_cast<int64_t>(ndata * (1.0f - o.val_split)));
  report->n_train_tokens = split * T;
  rec->steps_per_epoch = split;
  rec->total_steps = split * o.epochs;

  ggml_backend_t backend = ggml_backend_cpu_init();
  if (!backend) return Status::Internal("cannot initialise ggml's CPU backend");
  struct BackendFree {
    ggml_backend_t b;
    ~BackendFree() { ggml_backend_free(b); }
  } backend_free{backend};
  ggml_backend_cpu_set_n_threads(backend, o.n_threads > 0 ? o.n_threads : physical_cores());

  // Weights (trainable) and positions in one backend buffer.
  const std::vector<TensorSpec> specs = model_specs(o, V);
  ggml_init_params pp{(specs.size() + 4) * ggml_tensor_overhead(), nullptr, true};
  GgmlPtr ctx_p(ggml_init(pp));
  std::map<std::string, ggml_tensor*> w;
  std::vector<ggml_tensor*> params;
  report->n_params = 0;
  for (const TensorSpec& s : specs) {
    ggml_tensor* t = s.ne1 == 1 ? ggml_new_tensor_1d(ctx_p.get(), GGML_TYPE_F32, s.ne0)
                                : ggml_new_tensor_2d(ctx_p.get(), GGML_TYPE_F32, s.ne0, s.ne1);
    ggml_set_name(t, s.name.c_str());
    w[s.name] = t;
    params.push_back(t);
    report->n_params += static_cast<uint64_t>(ggml_nelements(t));
  }
  ggml_tensor* pos = ggml_new_tensor_1d(ctx_p.get(), GGML_TYPE_I32, T);
  // ggml-opt's static graphs want the input allocated with the weights.
  ggml_tensor* tokens = ggml_new_tensor_1d(ctx_p.get(), GGML_TYPE_I32, T);
  ggml_set_name(tokens, "tokens");
  ggml_set_input(tokens);
  // Per-position loss mask [1, T], multiplied into the logits. ggml's cross-entropy gradient
  // is softmax - labels, right only for labels that sum to 1, so tokens are weighted by
  // dropping them at random (keep probability = weight: the expected gradient is the weighted
  // one): a dropped position gets logits 0 and uniform labels, so its gradient is exactly 0.
  ggml_tensor* mask = ggml_new_tensor_2d(ctx_p.get(), GGML_TYPE_F32, 1, T);
  ggml_set_name(mask, "loss_mask");
  ggml_set_input(mask);
  ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors(ctx_p.get(), backend);
  if (!buf) return Status::ResourceExhausted("cannot allocate the model's weights");
  struct BufFree {
    ggml_backend_buffer_t b;
    ~BufFree() { ggml_backend_buffer_free(b); }
  } buf_free{buf};
  std::mt19937_64 rng(o.seed);
  std::vector<float> vals;
  for (size_t i = 0; i < specs.size(); ++i) {
    vals.resize(static_cast<size_t>(ggml_nelements(params[i])));
    fill_initial(specs[i], rng, &vals);
    ggml_backend_tensor_set(params[i], vals.data(), 0, vals.size() * sizeof(float));
    ggml_set_param(params[i]);
  }
  std::vector<int32_t> positions(static_cast<size_t>(T));
  for (int64_t i = 0; i < T; ++i) positions[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  ggml_backend_tensor_set(pos, positions.data(), 0, positions.size() * sizeof(int32_t));

  // The graph.
  const size_t graph_size = 16384;
  ggml_init_params cp{ggml_tensor_overhead() * graph_size * 4 +
                          ggml_graph_overhead_custom(graph_size, true) * 4,
                      nullptr, true};
  GgmlPtr ctx_c(ggml_init(cp));
  ggml_tensor* logits = ggml_mul(ctx_c.get(), build_forward(ctx_c.get(), o, w, tokens, pos), mask);
  ggml_set_name(logits, "logits");
  ggml_set_output(logits);

  // With OpenBLAS, matrix products and weight gradients go to llama.cpp's BLAS backend (it
  // computes in the CPU backend's host buffers, so nothing is copied); the rest stays on CPU.
  ggml_backend_t blas = nullptr;
#if defined(EDGELLM_TRAIN_BLAS)
  if (o.use_blas && (blas = ggml_backend_blas_init()) != nullptr) {
    ggml_backend_blas_set_n_threads(blas, o.n_threads > 0 ? o.n_threads : physical_cores());
  }
#endif
  BackendFree blas_free{blas};  // ggml_backend_free(nullptr) is a no-op
  std::vector<ggml_backend_t> backends;
  if (blas) backends.push_back(blas);
  backends.push_back(backend);
  report->gradient_backend = backends.size() > 1 ? "OpenBLAS" : "ggml CPU";
  ggml_backend_sched_t sched = ggml_backend_sched_new(backends.data(), nullptr,
                                                      static_cast<int>(backends.size()), graph_size,
                                                      false, true);
  struct SchedFree {
    ggml_backend_sched_t s;
    ~SchedFree() { ggml_backend_sched_free(s); }
  } sched_free{sched};
  ggml_opt_params op = ggml_opt_default_params(sched, GGML_OPT_LOSS_TYPE_CROSS_ENTROPY);
  op.ctx_compute = ctx_c.get();
  op.inputs = tokens;
  op.outputs = logits;
  op.opt_period = 1;
  op.get_opt_pars = lr_schedule;
  op.get_opt_pars_ud = rec;
  op.optimizer = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
  ggml_opt_context_t opt = ggml_opt_init(op);
  struct OptFree {
    ggml_opt_context_t c;
    ~OptFree() { ggml_opt_free(c); }
  } opt_free{opt};

  std::vector<float> onehot(static_cast<size_t>(V * T)), keep(static_cast<size_t>(T));
  std::mt19937_64 mask_rng(o.seed ^ 0x3A5C);
  std::uniform_real_distribution<float> coin(0.0f, 1.0f);
  const double log_v = std::log(static_cast<double>(V));
  // One window; returns its mean loss over the positions kept (training: answers plus the
  // sampled prompt positions; validation: answers only; `all` or weight 1: every position).
  auto run = [&](int64_t window, bool train, ggml_opt_result_t result, bool all = false) -> double {
    ggml_opt_alloc(opt, train);
    const llama_token* src = toks.data() + starts[static_cast<size_t>(window)];
    const uint8_t* ans = answer_tok.data() + starts[static_cast<size_t>(window)] + 1;
    ggml_backend_tensor_set(ggml_opt_inputs(opt), src, 0, static_cast<size_t>(T) * sizeof(int32_t));
    int64_t kept = 0;
    for (int64_t t = 0; t < T; ++t) {
      const bool k = ans[t] || all || o.prompt_loss_weight >= 1.0f ||
                     (train && o.prompt_loss_weight > 0 && coin(mask_rng) < o.prompt_loss_weight);
      keep[static_cast<size_t>(t)] = k ? 1.0f : 0.0f;
      kept += k;
      float* row = onehot.data() + t * V;
      if (k) {
        std::fill(row, row + V, 0.0f);
        row[src[t + 1]] = 1.0f;
      } else {
        std::fill(row, row + V, 1.0f / static_cast<float>(V));
      }
    }
    ggml_backend_tensor_set(mask, keep.data(), 0, keep.size() * sizeof(float));
    ggml_backend_tensor_set(ggml_opt_labels(opt), onehot.data(), 0, onehot.size() * sizeof(float));
    ggml_opt_eval(opt, result);
    float mean = 0;
    ggml_backend_tensor_get(ggml_opt_loss(opt), &mean, 0, sizeof(float));
    // The mean over all T rows includes log V for each dropped row: take it out.
    return kept ? (static_cast<double>(mean) * T - static_cast<double>(T - kept) * log_v) / kept : 0.0;
  };
  ggml_opt_result_t rt = ggml_opt_result_init();
  ggml_opt_result_t re = ggml_opt_result_init();
  std::vector<int64_t> order(static_cast<size_t>(split));
  for (int64_t i = 0; i < split; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937_64 shuffle(o.seed ^ 0xE90C);
  Status st;
  for (rec->epoch = 0; rec->epoch < o.epochs && st.ok(); ++rec->epoch) {
    rec->last_ibatch = 0;
    rec->last_sum = 0;
    std::shuffle(order.begin(), order.end(), shuffle);
    double sum_t = 0, sum_e = 0;
    for (int64_t i = 0; i < split && !rec->stop.load(); ++i) {
      rec->opt_steps = rec->epoch * split + i;
      sum_t += run(order[static_cast<size_t>(i)], true, rt);
      report_batch(rec, i + 1, split, sum_t / static_cast<double>(i + 1));
    }
    for (int64_t i = split; i < ndata && !rec->stop.load(); ++i) sum_e += run(i, false, re);
    report->epoch_train_loss.push_back(sum_t / static_cast<double>(split));
    if (split < ndata) {
      report->epoch_val_loss.push_back(sum_e / static_cast<double>(ndata - split));
    }
    ggml_opt_result_reset(rt);
    ggml_opt_result_reset(re);
    if (rec->stop.load()) st = Status::Cancelled("training cancelled");
  }
  if (st.ok()) {
    // A probe for consistency checks: the first training window and this graph's loss on it,
    // which llama.cpp's inference on the saved file must reproduce (eval with tokens).
    report->probe_loss = run(0, false, re, /*all=*/true);
    report->probe_tokens.assign(toks.begin() + starts[0], toks.begin() + starts[0] + T + 1);
  }
  ggml_opt_result_free(rt);
  ggml_opt_result_free(re);
  if (!st.ok()) return st;

  // Save: the trained tensors under llama.cpp's names, with the vocabulary and template.
  GgufPtr g(gguf_init_empty());
  set_metadata(g.get(), o, v);
  for (ggml_tensor* t : params) gguf_add_tensor(g.get(), t);
  return write_gguf_atomically(g.get(), o.output, "the model");
}

}  // namespace edgellm::train
