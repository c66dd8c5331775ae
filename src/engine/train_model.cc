// train_model: corpus -> vocabulary -> a randomly initialised llama-architecture GGUF ->
// next-token training with libllama's optimizer (llama_opt_init / llama_opt_epoch) -> GGUF.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>

#include "edgellm/session.h"
#include "edgellm/train.h"
#include "engine/llama_glue.h"
#include "engine/ggml_ptr.h"
#include "ggml-backend.h"
#if defined(EDGELLM_TRAIN_BLAS)
#include "ggml-blas.h"
#endif
#include "ggml-cpu.h"
#include "ggml-opt.h"
#include "ggml.h"
#include "gguf.h"

namespace edgellm {
namespace {

using Clock = std::chrono::steady_clock;

const char* kChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] "
    "+ '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' "
    "}}{% endif %}";

struct Spec {
  std::string name;
  int64_t ne0, ne1;
  float std;  // initial normal std; 0: ones (norm weights)
};

// The llama architecture's tensors (tied embeddings: no output.weight). Matrices start as
// normal(0, 0.02), output projections scaled down by sqrt(2 * n_layer) as GPT-2 does.
std::vector<Spec> model_specs(const TrainOptions& o, int64_t n_vocab) {
  const float proj = 0.02f / std::sqrt(2.0f * o.n_layer);
  std::vector<Spec> specs = {{"token_embd.weight", o.n_embd, n_vocab, 0.02f},
                             {"output_norm.weight", o.n_embd, 1, 0}};
  for (int i = 0; i < o.n_layer; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    specs.push_back({b + "attn_norm.weight", o.n_embd, 1, 0});
    specs.push_back({b + "attn_q.weight", o.n_embd, o.n_embd, 0.02f});
    specs.push_back({b + "attn_k.weight", o.n_embd, o.n_embd, 0.02f});
    specs.push_back({b + "attn_v.weight", o.n_embd, o.n_embd, 0.02f});
    specs.push_back({b + "attn_output.weight", o.n_embd, o.n_embd, proj});
    specs.push_back({b + "ffn_norm.weight", o.n_embd, 1, 0});
    specs.push_back({b + "ffn_gate.weight", o.n_embd, o.n_ff, 0.02f});
    specs.push_back({b + "ffn_up.weight", o.n_embd, o.n_ff, 0.02f});
    specs.push_back({b + "ffn_down.weight", o.n_ff, o.n_embd, proj});
  }
  return specs;
}

void fill_initial(const Spec& s, std::mt19937_64& rng, std::vector<float>* vals) {
  std::normal_distribution<float> nd(0.0f, s.std > 0 ? s.std : 1.0f);
  for (float& x : *vals) x = s.std > 0 ? nd(rng) : 1.0f;
}

void set_metadata(gguf_context* g, const TrainOptions& o, const Vocab& v) {
  gguf_set_val_str(g, "general.architecture", "llama");
  gguf_set_val_str(g, "general.name", "edgellm-tiny");
  gguf_set_val_u32(g, "general.file_type", 0);  // LLAMA_FTYPE_ALL_F32
  gguf_set_val_u32(g, "llama.context_length", static_cast<uint32_t>(o.n_ctx));
  gguf_set_val_u32(g, "llama.embedding_length", static_cast<uint32_t>(o.n_embd));
  gguf_set_val_u32(g, "llama.block_count", static_cast<uint32_t>(o.n_layer));
  gguf_set_val_u32(g, "llama.feed_forward_length", static_cast<uint32_t>(o.n_ff));
  gguf_set_val_u32(g, "llama.attention.head_count", static_cast<uint32_t>(o.n_head));
  gguf_set_val_u32(g, "llama.attention.head_count_kv", static_cast<uint32_t>(o.n_head));
  gguf_set_val_u32(g, "llama.rope.dimension_count", static_cast<uint32_t>(o.n_embd / o.n_head));
  gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
  gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  gguf_set_val_u32(g, "llama.vocab_size", static_cast<uint32_t>(v.tokens.size()));
  gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
  std::vector<const char*> toks;
  for (const std::string& t : v.tokens) toks.push_back(t.c_str());
  gguf_set_arr_str(g, "tokenizer.ggml.tokens", toks.data(), toks.size());
  gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, v.scores.data(), v.scores.size());
  gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, v.types.data(), v.types.size());
  gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos));
  gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.im_end));
  gguf_set_val_u32(g, "tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(v.unk));
  gguf_set_val_bool(g, "tokenizer.ggml.add_bos_token", true);
  gguf_set_val_bool(g, "tokenizer.ggml.add_eos_token", false);
  gguf_set_val_bool(g, "tokenizer.ggml.add_space_prefix", false);
  gguf_set_val_str(g, "tokenizer.chat_template", kChatTemplate);
  gguf_set_val_u64(g, "edgellm.train.seed", o.seed);
  gguf_set_val_u32(g, "edgellm.train.epochs", static_cast<uint32_t>(o.epochs));
  gguf_set_val_u32(g, "edgellm.train.items_per_task", static_cast<uint32_t>(o.items_per_task));
}

// Writes the untrained model for the llama_opt path.
Status write_initial(const TrainOptions& o, const Vocab& v, const std::string& path,
                     uint64_t* n_params) {
  GgufPtr g(gguf_init_empty());
  set_metadata(g.get(), o, v);
  const std::vector<Spec> specs = model_specs(o, static_cast<int64_t>(v.tokens.size()));
  ggml_init_params ip{specs.size() * ggml_tensor_overhead() + 1024, nullptr, true};
  GgmlPtr ctx(ggml_init(ip));
  std::vector<ggml_tensor*> ts;
  *n_params = 0;
  for (const Spec& s : specs) {
    ggml_tensor* t = s.ne1 == 1 ? ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, s.ne0)
                                : ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, s.ne0, s.ne1);
    ggml_set_name(t, s.name.c_str());
    gguf_add_tensor(g.get(), t);
    ts.push_back(t);
    *n_params += static_cast<uint64_t>(ggml_nelements(t));
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status::Unavailable("cannot create " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> meta(gguf_get_meta_size(g.get()));
  gguf_get_meta_data(g.get(), meta.data());
  bool ok = std::fwrite(meta.data(), 1, meta.size(), f) == meta.size();
  std::mt19937_64 rng(o.seed);
  const size_t align = gguf_get_alignment(g.get());
  const char zeros[64] = {};
  std::vector<float> vals;
  for (size_t i = 0; ok && i < specs.size(); ++i) {
    vals.resize(static_cast<size_t>(ggml_nelements(ts[i])));
    fill_initial(specs[i], rng, &vals);
    const size_t nbytes = vals.size() * sizeof(float);
    ok = std::fwrite(vals.data(), 1, nbytes, f) == nbytes;
    const size_t pad = (align - nbytes % align) % align;
    if (ok && pad) ok = std::fwrite(zeros, 1, pad, f) == pad;
  }
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return Status::ResourceExhausted("writing " + path + " failed: check free disk space");
  return Status::Ok();
}

// ggml-opt's callbacks carry no user pointer: one training run per process at a time.
struct Recorder {
  const TrainOptions* o = nullptr;
  TrainReport* report = nullptr;
  int32_t epoch = 0;
  int64_t steps_per_epoch = 0, last_ibatch = 0;
  double last_sum = 0;  // loss x batches at the last report
  double lr = 0;
  int64_t opt_steps = 0, total_steps = 0;
  Clock::time_point t0;
  std::atomic<bool> stop{false};
};
std::atomic<Recorder*> g_recorder{nullptr};

ggml_opt_optimizer_params lr_schedule(void* ud) {
  auto* r = static_cast<Recorder*>(ud);  // opt_steps: the global step, kept by the callback
  ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(nullptr);
  // Linear warm-up over the first 2% of steps, then cosine from lr to lr / 20.
  const double total = std::max<int64_t>(1, r->total_steps);
  const double warm = std::max(1.0, total * 0.02);
  const double step = static_cast<double>(r->opt_steps);
  const double peak = r->o->lr, floor = peak / 20;
  double lr = step < warm ? peak * (step + 1) / warm
                          : floor + 0.5 * (peak - floor) *
                                        (1 + std::cos(M_PI * std::min(1.0, (step - warm) / (total - warm))));
  r->lr = lr;
  p.adamw.alpha = static_cast<float>(lr);
  p.adamw.wd = r->o->weight_decay;
  return p;
}

// Records the curve and reports progress; `loss` is the epoch's mean training loss so far.
void report_batch(Recorder* r, int64_t ibatch, int64_t ibatch_max, double loss) {
  const int every = std::max(1, r->o->report_every);
  if (ibatch % every != 0 && ibatch != ibatch_max) return;
  const double sum = loss * static_cast<double>(ibatch);
  const double interval = ibatch > r->last_ibatch
                              ? (sum - r->last_sum) / static_cast<double>(ibatch - r->last_ibatch)
                              : loss;
  r->last_ibatch = ibatch;
  r->last_sum = sum;
  const int64_t step = r->epoch * r->steps_per_epoch + ibatch;
  r->report->curve.push_back({step, interval});
  if (r->o->on_progress) {
    const double secs = std::chrono::duration<double>(Clock::now() - r->t0).count();
    if (!r->o->on_progress({r->epoch + 1, r->o->epochs, ibatch, ibatch_max, interval, r->lr, secs})) {
      r->stop.store(true);
    }
  }
}

void on_train_batch(bool train, ggml_opt_context_t, ggml_opt_dataset_t, ggml_opt_result_t result,
                    int64_t ibatch, int64_t ibatch_max, int64_t) {
  Recorder* r = g_recorder.load();
  if (!r || !train) return;
  r->opt_steps = r->epoch * r->steps_per_epoch + ibatch;  // drives the learning-rate schedule
  double loss = 0, unc = 0;
  ggml_opt_result_loss(result, &loss, &unc);
  report_batch(r, ibatch, ibatch_max, loss);
}

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
  const std::vector<Spec> specs = model_specs(o, V);
  ggml_init_params pp{(specs.size() + 4) * ggml_tensor_overhead(), nullptr, true};
  GgmlPtr ctx_p(ggml_init(pp));
  std::map<std::string, ggml_tensor*> w;
  std::vector<ggml_tensor*> params;
  report->n_params = 0;
  for (const Spec& s : specs) {
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

struct ModelFree {
  llama_model* m;
  ~ModelFree() { llama_model_free(m); }
};

}  // namespace

Result<TrainReport> train_model(const TrainOptions& o) {
  if (o.output.empty()) return Status::InvalidArgument("no output path: pass -o FILE.gguf");
  if (o.n_embd < 16 || o.n_embd > 2048 || o.n_head < 1 || o.n_embd % o.n_head != 0 ||
      o.n_layer < 1 || o.n_layer > 64 || o.n_ff < 16 || o.n_ctx < 16 || o.n_ctx > 4096) {
    return Status::InvalidArgument("model shape out of range: n_embd 16..2048 divisible by "
                                   "n_head, 1..64 layers, n_ff >= 16, n_ctx 16..4096");
  }
  if (!(o.prompt_loss_weight >= 0 && o.prompt_loss_weight <= 1)) {
    return Status::InvalidArgument("the prompt loss weight must be in 0..1");
  }
  if (o.epochs < 1 || o.epochs > 1000 || !(o.lr > 0 && o.lr < 1) ||
      !(o.val_split >= 0 && o.val_split < 0.5f) || o.items_per_task < 1 ||
      std::any_of(o.task_mix.begin(), o.task_mix.end(),
                  [](const auto& m) { return !(m.second >= 0 && m.second <= 100); })) {
    return Status::InvalidArgument("epochs 1..1000, lr in (0, 1), val_split in [0, 0.5), items >= 1");
  }
  for (const auto& m : o.task_mix) {
    const auto& tasks = corpus_tasks();
    if (std::find(tasks.begin(), tasks.end(), m.first) == tasks.end()) {
      return Status::InvalidArgument("task mix names an unknown task '" + m.first +
                                     "': use intent, extract, math, code or chat");
    }
  }
  if (o.use_blas && o.use_llama_opt) {
    return Status::InvalidArgument("--blas applies to edgellm's own training graph, not --llama-opt");
  }
#if !defined(EDGELLM_TRAIN_BLAS)
  if (o.use_blas) {
    return Status::FailedPrecondition(
        "this edgellm was built without OpenBLAS: apt install libopenblas-openmp-dev and "
        "rebuild, or train without --blas");
  }
#endif
  Recorder rec;
  Recorder* expected = nullptr;
  if (!g_recorder.compare_exchange_strong(expected, &rec)) {
    return Status::FailedPrecondition("another training run is in progress in this process");
  }
  struct Release {
    ~Release() { g_recorder.store(nullptr); }
  } release;
  TrainReport report;
  rec.o = &o;
  rec.report = &report;
  rec.t0 = Clock::now();

  // 1. Corpus: every task's train split, examples shuffled together.
  std::vector<std::string> examples;
  for (const std::string& task : corpus_tasks()) {
    float share = 1.0f;
    for (const auto& [name, w] : o.task_mix) {
      if (name == task) share = w;
    }
    const int32_t n = std::max(0, static_cast<int32_t>(std::lround(o.items_per_task * share)));
    auto items = make_task_items(task, Split::kTrain, n, o.seed);
    if (!items.ok()) return items.status();
    for (const TaskItem& it : *items) examples.push_back(chat_example(it));
  }
  std::mt19937_64 shuffle_rng(o.seed ^ 0x5EED);
  std::shuffle(examples.begin(), examples.end(), shuffle_rng);
  std::string text;
  // Each example starts with BOS, as every prompt does at inference (add_bos_token): a model
  // that never saw BOS attends to an untrained vector at position 0 and falls apart.
  for (const std::string& e : examples) text += "<s>" + e;

  // 2. Vocabulary, 3. the untrained model.
  VocabOptions vo;
  vo.n_vocab = o.n_vocab;
  auto vocab = learn_vocab(text, vo);
  if (!vocab.ok()) return vocab.status();
  report.n_vocab = static_cast<int32_t>(vocab->tokens.size());
  const std::string suffix = ".partial." + std::to_string(::getpid());
  const std::string init_path = o.output + ".init" + suffix;
  struct Cleanup {
    std::string path;
    ~Cleanup() { std::remove(path.c_str()); }
  } cleanup{init_path};
  EDGELLM_RETURN_IF_ERROR(write_initial(o, *vocab, init_path, &report.n_params));

  if (!o.use_llama_opt) {
    // Tokenize with llama.cpp's own tokenizer over the new vocabulary (a vocab-only load).
    engine::ensure_backend();
    llama_model_params vp = llama_model_default_params();
    vp.vocab_only = true;
    llama_model* vm = llama_model_load_from_file(init_path.c_str(), vp);
    if (!vm) return Status::Internal("cannot load the new vocabulary: " + engine::take_llama_errors());
    // Example by example: llama.cpp's special-token split copies the rest of the text at each
    // special token, quadratic in one multi-megabyte string (minutes); each example starts with
    // BOS, so the pieces tokenize exactly as the whole text would.
    ModelFree vm_free{vm};
    std::vector<llama_token> toks, buf;
    for (const std::string& e : examples) {
      const std::string piece = "<s>" + e;
      buf.resize(piece.size() + 16);
      const int32_t nt = llama_tokenize(llama_model_get_vocab(vm), piece.data(),
                                        static_cast<int32_t>(piece.size()), buf.data(),
                                        static_cast<int32_t>(buf.size()), false, true);
      if (nt < 0) return Status::Internal("tokenizing the corpus failed");
      toks.insert(toks.end(), buf.begin(), buf.begin() + nt);
    }
    EDGELLM_RETURN_IF_ERROR(train_direct(o, *vocab, toks, &rec, &report));
    report.seconds = std::chrono::duration<double>(Clock::now() - rec.t0).count();
    return report;
  }

  // 4. Load it with writable weights and an F32 KV cache (ggml's backward has no F16 OUT_PROD).
  engine::ensure_backend();
  engine::take_llama_errors();
  llama_model_params mp = llama_model_default_params();
  mp.use_extra_bufts = false;  // plain F32 buffers the optimizer can update in place
  mp.load_mode = LLAMA_LOAD_MODE_NONE;  // writable weights, as llama.cpp's finetune example
  llama_model* model = llama_model_load_from_file(init_path.c_str(), mp);
  if (!model) return Status::Internal("cannot load the initial model: " + engine::take_llama_errors());
  ModelFree model_free{model};
  const int32_t threads = o.n_threads > 0 ? o.n_threads : physical_cores();
  // One window = one micro-batch = one optimizer step. llama.cpp pads contexts to a multiple
  // of 256, so the window is rounded up to one.
  const uint32_t window = static_cast<uint32_t>((o.n_ctx + 255) / 256 * 256);
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = window;
  cp.n_batch = window;
  cp.n_ubatch = window;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.type_k = GGML_TYPE_F32;
  cp.type_v = GGML_TYPE_F32;
  // ggml has no backward pass for flash attention: with it (the CPU default is "auto") the
  // attention weights get no gradient and the model only ever learns bigram statistics.
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) return Status::Internal("cannot create a training context: " + engine::take_llama_errors());
  struct CtxFree {
    llama_context* c;
    ~CtxFree() { llama_free(c); }
  } ctx_free{ctx};

  // 5. Tokens and windows (stride n_ctx, labels shifted by one). llama.cpp may pad the context
  // (to a multiple of 256): the windows must be exactly its size.
  const int32_t n_ctx = static_cast<int32_t>(llama_n_ctx(ctx));
  const llama_vocab* lv = llama_model_get_vocab(model);
  std::vector<llama_token> toks(text.size() + 16);
  int32_t nt = llama_tokenize(lv, text.data(), static_cast<int32_t>(text.size()), toks.data(),
                              static_cast<int32_t>(toks.size()), false, true);
  if (nt < 0) return Status::Internal("tokenizing the corpus failed");
  toks.resize(static_cast<size_t>(nt));
  const int64_t ndata = (static_cast<int64_t>(toks.size()) - 1) / n_ctx;
  if (ndata < 2) return Status::InvalidArgument("the corpus is too small for one window");
  ggml_opt_dataset_t ds = ggml_opt_dataset_init(GGML_TYPE_I32, GGML_TYPE_I32, n_ctx, n_ctx, ndata, 1);
  auto* data = static_cast<llama_token*>(ggml_opt_dataset_data(ds)->data);
  auto* labels = static_cast<llama_token*>(ggml_opt_dataset_labels(ds)->data);
  for (int64_t i = 0; i < ndata; ++i) {
    std::memcpy(data + i * n_ctx, toks.data() + i * n_ctx, n_ctx * sizeof(llama_token));
    std::memcpy(labels + i * n_ctx, toks.data() + i * n_ctx + 1, n_ctx * sizeof(llama_token));
  }
  const int64_t split = std::max<int64_t>(1, static_cast<int64_t>(ndata * (1.0f - o.val_split)));
  report.n_train_tokens = split * n_ctx;
  rec.steps_per_epoch = split;
  rec.total_steps = split * o.epochs;

  // 6. Train.
  llama_opt_params op{};
  op.n_ctx_train = 0;
  op.param_filter = llama_opt_param_filter_all;
  op.param_filter_ud = nullptr;
  op.get_opt_pars = lr_schedule;
  op.get_opt_pars_ud = &rec;
  op.optimizer_type = GGML_OPT_OPTIMIZER_TYPE_ADAMW;
  llama_opt_init(ctx, model, op);
  ggml_opt_result_t rt = ggml_opt_result_init();
  ggml_opt_result_t re = ggml_opt_result_init();
  Status st;
  for (rec.epoch = 0; rec.epoch < o.epochs && st.ok(); ++rec.epoch) {
    rec.last_ibatch = 0;
    rec.last_sum = 0;
    llama_opt_epoch(ctx, ds, rt, re, split, on_train_batch, nullptr);
    double lt = 0, le = 0, unc = 0;
    ggml_opt_result_loss(rt, &lt, &unc);
    report.epoch_train_loss.push_back(lt);
    if (split < ndata) {
      ggml_opt_result_loss(re, &le, &unc);
      report.epoch_val_loss.push_back(le);
    }
    ggml_opt_result_reset(rt);
    ggml_opt_result_reset(re);
    if (rec.stop.load()) st = Status::Cancelled("training cancelled");
  }
  ggml_opt_result_free(rt);
  ggml_opt_result_free(re);
  ggml_opt_dataset_free(ds);
  if (!st.ok()) return st;

  // 7. Save atomically.
  const std::string tmp = o.output + suffix + ".llama";
  struct RemoveTmp {
    std::string path;
    ~RemoveTmp() { std::remove(path.c_str()); }
  } remove_tmp{tmp};
  llama_model_save_to_file(model, tmp.c_str());
  // llama.cpp's saver leaves out the chat template: add it (and our record of the run).
  {
    ggml_context* data_ctx = nullptr;
    gguf_init_params gp{/*no_alloc=*/false, &data_ctx};
    GgufPtr saved(gguf_init_from_file(tmp.c_str(), gp));
    GgmlPtr data_owner(data_ctx);
    if (!saved) return Status::Internal("cannot reopen the saved model " + tmp);
    GgufPtr out(gguf_init_empty());
    gguf_set_kv(out.get(), saved.get());
    gguf_set_val_str(out.get(), "tokenizer.chat_template", kChatTemplate);
    gguf_set_val_u64(out.get(), "edgellm.train.seed", o.seed);
    gguf_set_val_u32(out.get(), "edgellm.train.epochs", static_cast<uint32_t>(o.epochs));
    gguf_set_val_u32(out.get(), "edgellm.train.items_per_task", static_cast<uint32_t>(o.items_per_task));
    // The saver writes absent special tokens as 0xFFFFFFFF, which llama.cpp warns about.
    for (int64_t i = gguf_get_n_kv(out.get()) - 1; i >= 0; --i) {
      if (gguf_get_kv_type(out.get(), i) == GGUF_TYPE_UINT32 &&
          gguf_get_val_u32(out.get(), i) == 0xFFFFFFFFu) {
        gguf_remove_key(out.get(), gguf_get_key(out.get(), i));
      }
    }
    // By name: the data context also holds the file's data blob as a tensor of its own.
    for (int64_t i = 0; i < gguf_get_n_tensors(saved.get()); ++i) {
      ggml_tensor* t = ggml_get_tensor(data_ctx, gguf_get_tensor_name(saved.get(), i));
      if (!t) return Status::Internal("the saved model lost a tensor");
      gguf_add_tensor(out.get(), t);
    }
    EDGELLM_RETURN_IF_ERROR(write_gguf_atomically(out.get(), o.output, "the model"));
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - rec.t0).count();
  return report;
}

}  // namespace edgellm
