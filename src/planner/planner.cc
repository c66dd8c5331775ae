// plan_memory: the seed's formula next to an exact plan from libllama's own dry run.
#include "edgellm/planner.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "edgellm/device.h"
#include "edgellm/embed.h"
#include "engine/draft_model.h"
#include "engine/llama_glue.h"
#include "engine/llama_glue_mtmd.h"
#include "engine/model_impl.h"
#include "ggml-backend.h"
#include "llama-ext.h"

namespace edgellm {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

ggml_type ggml_kv_type(KvType t) {
  switch (t) {
    case KvType::kF16: return GGML_TYPE_F16;
    case KvType::kQ8_0: return GGML_TYPE_Q8_0;
    case KvType::kQ4_0: return GGML_TYPE_Q4_0;
  }
  return GGML_TYPE_F16;
}

// Bytes per cached element: f16 2; q8_0 34 bytes per 32; q4_0 18 bytes per 32.
double kv_bytes_per_element(KvType t) {
  switch (t) {
    case KvType::kF16: return 2.0;
    case KvType::kQ8_0: return 34.0 / 32.0;
    case KvType::kQ4_0: return 18.0 / 32.0;
  }
  return 2.0;
}

struct DryRun {
  uint64_t model = 0, context = 0, compute = 0;
};

// Creates a context on a no_alloc model: libllama sizes every buffer without allocating.
// With embed_texts > 0, the context an Embedder creates (n_ctx = n_batch = batch tokens).
Status dry_run(const Model::Impl& m, int32_t n_ctx, int32_t n_batch, KvType kv, DryRun* out,
               int32_t embed_texts = 0) {
  llama_context_params cp =
      embed_texts > 0
          ? engine::embed_context_params(n_ctx, embed_texts, -1, engine::model_pooling(m.model))
          : engine::context_params(n_ctx, n_batch, -1, ggml_kv_type(kv));
  engine::take_llama_errors();
  llama_context* ctx = nullptr;
  try {
    ctx = llama_init_from_model(m.model, cp);
  } catch (...) {
    ctx = nullptr;
  }
  if (!ctx) {
    return Status::InvalidArgument("libllama cannot size a context of " + std::to_string(n_ctx) +
                                   " tokens with KV type " + kv_type_name(kv) + ": " +
                                   engine::take_llama_errors());
  }
  *out = {};
  for (const auto& [buft, mb] : llama_get_memory_breakdown(ctx)) {
    if (!ggml_backend_buft_is_host(buft)) continue;
    out->model += mb.model;
    out->context += mb.context;
    out->compute += mb.compute;
  }
  llama_free(ctx);
  return Status::Ok();
}

// Everything resident that is neither weights, KV cache nor compute buffers: mostly libllama's
// vocabulary tables (token strings, maps, BPE merges), plus the logits buffer, thread stacks
// and allocator slack. Calibrated by measurement (docs/device-and-planner.md):
//  - vocabulary: `edgellm tokens` on llama.cpp's ggml-vocab-qwen2.gguf (a vocabulary-only load)
//    peaks 52.6 MiB above the bare CLI, 363 bytes per token of its 151,936 (llama-bpe: 541,
//    gpt-2: 408, llama-spm: 235); 360 per token is used;
//  - fixed part: what the peak-RSS benchmark (edgellm-membench, 24 rows) left over after
//    weights + KV + compute + vocabulary: 53-66 MiB in all, about 5 MiB beyond the vocabulary.
uint64_t runtime_overhead(const ModelInfo& info) {
  return 5 * kMiB + static_cast<uint64_t>(info.n_vocab) * 360;
}

std::string gib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", b / double(1ull << 30));
  return buf;
}

}  // namespace

const char* kv_type_name(KvType type) {
  switch (type) {
    case KvType::kF16: return "f16";
    case KvType::kQ8_0: return "q8_0";
    case KvType::kQ4_0: return "q4_0";
  }
  return "f16";
}

Result<KvType> kv_type_from_name(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  if (n == "f16") return KvType::kF16;
  if (n == "q8_0") return KvType::kQ8_0;
  if (n == "q4_0") return KvType::kQ4_0;
  return Status::InvalidArgument("unknown KV cache type '" + name + "': use f16, q8_0 or q4_0");
}

double nominal_bits(const std::string& quant) {
  if (quant == "F32") return 32;
  if (quant == "F16" || quant == "BF16") return 16;
  if (quant.size() >= 2 && (quant[0] == 'Q' || quant[0] == 'I')) {
    const size_t d = quant.find_first_of("0123456789");
    if (d != std::string::npos) return quant[d] - '0';
  }
  return 0;
}

uint64_t formula_bytes(uint64_t n_params, double bits) {
  return static_cast<uint64_t>(static_cast<double>(n_params) * bits / 8.0 * 1.2);
}

// The device's budget and the seed's formula, for either plan.
static Status plan_basics(const ModelInfo& info, const PlanOptions& o, MemoryPlan* p) {
  p->ram_bytes = o.ram_bytes;
  if (p->ram_bytes == 0) {
    auto dev = read_device_profile();
    if (!dev.ok()) return dev.status();
    p->ram_bytes = dev->total_ram_bytes;
  }
  p->budget_bytes = static_cast<uint64_t>(static_cast<double>(p->ram_bytes) * o.budget_fraction);
  p->n_params = info.n_params;
  p->quant = info.quant;
  p->formula_bits = nominal_bits(info.quant);
  p->formula_bytes = formula_bytes(info.n_params, p->formula_bits);
  return Status::Ok();
}

// An Embedder's plan: weights, the context of one batch (a decoder embedder's KV cells; an
// encoder has none), its compute buffers and output rows. No context search: the batch size
// is what an app chooses, and the advice says which one fits.
static Result<MemoryPlan> plan_embedder(const Model& model, const PlanOptions& o) {
  const ModelInfo& info = model.info();
  MemoryPlan p;
  p.kv_type = o.kv_type;
  const int32_t per_text = std::min(info.n_ctx_train > 0 ? info.n_ctx_train : kDefaultMaxEmbedTokens,
                                    kDefaultMaxEmbedTokens);
  p.n_ctx = o.n_ctx == -1 ? std::max(512, per_text) : o.n_ctx;
  if (p.n_ctx < 16 || p.n_ctx > 65536) {
    return Status::InvalidArgument("batch tokens " + std::to_string(p.n_ctx) +
                                   " are outside 16..65536");
  }
  if (o.embed_texts < 1 || o.embed_texts > engine::max_sequences()) {
    return Status::InvalidArgument("texts per batch " + std::to_string(o.embed_texts) +
                                   " are outside 1.." + std::to_string(engine::max_sequences()));
  }
  p.n_batch = p.n_ctx;
  EDGELLM_RETURN_IF_ERROR(plan_basics(info, o, &p));
  DryRun dr;
  EDGELLM_RETURN_IF_ERROR(dry_run(*model.impl(), p.n_ctx, p.n_ctx, o.kv_type, &dr, o.embed_texts));
  p.weights_bytes = info.weights_bytes;
  p.kv_bytes = dr.context;
  p.kv_bytes_llama = dr.context;
  p.compute_bytes = dr.compute;
  p.overhead_bytes = runtime_overhead(info);
  p.outputs_bytes = static_cast<uint64_t>(p.n_ctx) *
                    (static_cast<uint64_t>(info.n_vocab) + static_cast<uint64_t>(info.n_embd)) *
                    sizeof(float);
  p.total_bytes = p.weights_bytes + p.kv_bytes + p.compute_bytes + p.overhead_bytes +
                  p.outputs_bytes;
  p.fits = p.total_bytes <= p.budget_bytes;
  p.max_ctx_that_fits = p.fits ? p.n_ctx : 0;
  if (!p.fits) {
    p.advice = "needs " + gib(p.total_bytes) + " with batches of " + std::to_string(p.n_ctx) +
               " tokens, budget is " + gib(p.budget_bytes) +
               ": use smaller batches (batch_tokens, --batch) or a smaller model";
  }
  return p;
}

Result<MemoryPlan> plan_memory(const std::string& model_path, const PlanOptions& o) {
  if (!(o.budget_fraction > 0 && o.budget_fraction <= 1)) {
    return Status::InvalidArgument("budget fraction must be in (0, 1], e.g. 0.4");
  }
  if (o.n_batch < 1) return Status::InvalidArgument("n_batch must be >= 1");
  LoadOptions lo;
  lo.metadata_only = true;
  auto model = Model::Load(model_path, lo);
  if (!model.ok()) return model.status();
  const ModelInfo& info = (*model)->info();

  if (o.embedding) return plan_embedder(**model, o);
  MemoryPlan p;
  p.kv_type = o.kv_type;
  p.n_ctx = o.n_ctx == -1 ? std::min(info.n_ctx_train > 0 ? info.n_ctx_train : 2048, 2048)
                          : o.n_ctx;
  if (p.n_ctx < 16 || (info.n_ctx_train > 0 && p.n_ctx > info.n_ctx_train)) {
    return Status::InvalidArgument("n_ctx " + std::to_string(p.n_ctx) + " is outside 16.." +
                                   std::to_string(info.n_ctx_train) + " for this model");
  }
  p.n_batch = std::min(o.n_batch, p.n_ctx);
  EDGELLM_RETURN_IF_ERROR(plan_basics(info, o, &p));

  DryRun dr;
  EDGELLM_RETURN_IF_ERROR(dry_run(*(*model)->impl(), p.n_ctx, p.n_batch, o.kv_type, &dr));
  auto kv_of = [&](const ModelInfo& mi, int32_t ctx) {
    const uint64_t head_dim = mi.n_head > 0 ? mi.n_embd / mi.n_head : 0;
    return static_cast<uint64_t>(2.0 * mi.n_layer * ctx * mi.n_head_kv * head_dim *
                                 kv_bytes_per_element(o.kv_type));
  };
  auto kv_bytes = [&](int32_t ctx) { return kv_of(info, ctx); };
  // The draft model (PlanOptions::draft_path): its weights and overhead, and its own context's
  // KV cache and compute buffers at each n_ctx planned.
  std::unique_ptr<Model> draft;
  if (!o.draft_path.empty()) {
    auto dm = Model::Load(o.draft_path, lo);
    if (!dm.ok()) return dm.status();
    EDGELLM_RETURN_IF_ERROR(engine::check_draft_vocab(*(*model)->impl(), *(*dm)->impl()));
    draft = std::move(*dm);
  }
  auto draft_context = [&](int32_t ctx, uint64_t* bytes) -> Status {
    *bytes = 0;
    if (!draft) return Status::Ok();
    const ModelInfo& di = draft->info();
    if (di.n_ctx_train > 0 && ctx > di.n_ctx_train) {
      return Status::InvalidArgument("n_ctx " + std::to_string(ctx) + " exceeds the " +
                                     std::to_string(di.n_ctx_train) +
                                     " tokens the draft model was trained for");
    }
    DryRun d;
    EDGELLM_RETURN_IF_ERROR(dry_run(*draft->impl(), ctx, std::min(p.n_batch, ctx), o.kv_type, &d));
    *bytes = kv_of(di, ctx) + d.compute;
    return Status::Ok();
  };
  p.weights_bytes = info.weights_bytes;
  p.kv_bytes = kv_bytes(p.n_ctx);
  p.kv_bytes_llama = dr.context;
  p.compute_bytes = dr.compute;
  p.overhead_bytes = runtime_overhead(info);
  if (!o.mmproj_path.empty()) {
    // Checked first: llama.cpp's clip.cpp aborts on a key of the wrong type.
    uint64_t file_bytes = 0;
    EDGELLM_RETURN_IF_ERROR(precheck_gguf(o.mmproj_path, &file_bytes));
    EDGELLM_RETURN_IF_ERROR(check_projector(o.mmproj_path, info.n_embd));
    Result<uint64_t> proj = engine::projector_memory(o.mmproj_path, o.image_max_tokens);
    if (!proj.ok()) return proj.status();
    p.projector_bytes = *proj;
  }
  const uint64_t draft_fixed =
      draft ? draft->info().weights_bytes + runtime_overhead(draft->info()) : 0;
  if (draft) {
    uint64_t at_ctx = 0;
    EDGELLM_RETURN_IF_ERROR(draft_context(p.n_ctx, &at_ctx));
    p.draft_bytes = draft_fixed + at_ctx;
  }
  p.total_bytes = p.weights_bytes + p.kv_bytes + p.compute_bytes + p.overhead_bytes +
                  p.projector_bytes + p.draft_bytes;
  p.fits = p.total_bytes <= p.budget_bytes;

  // Largest context (a multiple of 256) within the budget; KV and compute grow with n_ctx.
  const uint64_t fixed = p.weights_bytes + p.overhead_bytes + p.projector_bytes + draft_fixed;
  auto fits_at = [&](int32_t ctx) {
    DryRun d;
    uint64_t draft_ctx = 0;
    if (!dry_run(*(*model)->impl(), ctx, std::min(p.n_batch, ctx), o.kv_type, &d).ok() ||
        !draft_context(ctx, &draft_ctx).ok()) {
      return false;
    }
    return fixed + kv_bytes(ctx) + d.compute + draft_ctx <= p.budget_bytes;
  };
  int32_t lo_ctx = 0, hi_ctx = std::max(256, info.n_ctx_train) / 256;
  while (lo_ctx < hi_ctx) {
    const int32_t mid = (lo_ctx + hi_ctx + 1) / 2;
    if (fits_at(mid * 256)) lo_ctx = mid; else hi_ctx = mid - 1;
  }
  p.max_ctx_that_fits = lo_ctx * 256;

  if (!p.fits) {
    if (p.max_ctx_that_fits >= 256) {
      p.advice = "needs " + gib(p.total_bytes) + " at n_ctx " + std::to_string(p.n_ctx) +
                 ", budget is " + gib(p.budget_bytes) + ": use --ctx " +
                 std::to_string(p.max_ctx_that_fits) + " or less" +
                 (o.kv_type == KvType::kF16 ? ", or --kv-type q8_0" : "") +
                 (draft ? ", or no draft model (it takes " + gib(p.draft_bytes) + ")" : "");
    } else {
      p.advice = "needs " + gib(p.total_bytes) + ", budget is " + gib(p.budget_bytes) +
                 ": the weights alone take " + gib(p.weights_bytes) +
                 (p.projector_bytes > 0 ? " and the projector " + gib(p.projector_bytes) : "") +
                 (p.draft_bytes > 0 ? " and the draft model " + gib(p.draft_bytes) : "") +
                 (p.formula_bits > 4 ? "; use a lower-bit quantization (e.g. Q4_K_M) or a smaller model"
                                     : "; use a smaller model") +
                 ", or fall back to the cloud on this device";
    }
  }
  return p;
}

}  // namespace edgellm
