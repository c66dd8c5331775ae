// MemoryPlanner: how much memory a model needs on a device, before loading its weights.
//
// Two estimates side by side:
//  - the seed's quick formula, params(B) x bits / 8 x 1.2 (labelled as such);
//  - an exact plan from the GGUF header plus libllama's own dry run (model loaded with
//    no_alloc, a context created with no_alloc): weights from the tensor table, KV cache from
//    2 x n_layer x n_ctx x n_head_kv x head_dim x bytes per element, compute buffers as
//    libllama sizes them for n_ctx / n_batch, plus a runtime overhead.
//
// Thread safety: plan_memory() may be called concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "edgellm/status.h"

namespace edgellm {

enum class KvType { kF16, kQ8_0, kQ4_0 };
const char* kv_type_name(KvType type);
Result<KvType> kv_type_from_name(const std::string& name);  // "f16", "q8_0", "q4_0"

struct PlanOptions {
  int32_t n_ctx = -1;        // -1 = as a Session would pick: min(n_ctx_train, 2048)
  int32_t n_batch = 512;     // prefill chunk (sizes the compute buffer). Default 512
  KvType kv_type = KvType::kF16;
  uint64_t ram_bytes = 0;    // device RAM; 0 = this device's total RAM
  double budget_fraction = 0.40;  // share of RAM the app may use (the seed: 40%)
  // Plan an Embedder (edgellm/embed.h) instead of a chat Session: n_ctx and n_batch are then
  // its batch_tokens (-1: its default, max(512, max tokens per text)) and `embed_texts` its
  // batch_texts; compute buffers come from the same dry run, and `outputs_bytes` counts the
  // output rows llama.cpp reserves for every token of a decode (n_vocab + n_embd floats each).
  bool embedding = false;
  int32_t embed_texts = 64;
  // The model's projector (LoadOptions::mmproj_path) and its image_max_tokens: its weights and
  // its encoder's compute buffer are planned too. Default none.
  std::string mmproj_path;
  int32_t image_max_tokens = -1;
  // A draft model for speculative decoding (SessionOptions::draft_model): its weights and its
  // own context of n_ctx tokens (KV cache, compute buffers) are planned too; one with another
  // vocabulary is kInvalidArgument. Default none.
  std::string draft_path;
};

struct MemoryPlan {
  // Inputs as resolved.
  int32_t n_ctx = 0, n_batch = 0;
  KvType kv_type = KvType::kF16;
  uint64_t ram_bytes = 0, budget_bytes = 0;
  std::string quant;            // the model's quantization, e.g. "Q4_K_M"
  // The seed's quick formula.
  double formula_bits = 0;      // nominal bits per weight of the quantization (4 for Q4_K_M)
  uint64_t formula_bytes = 0;   // n_params x bits / 8 x 1.2
  // Exact plan.
  uint64_t n_params = 0;
  uint64_t weights_bytes = 0;   // tensor data in the file
  uint64_t kv_bytes = 0;        // KV cache at n_ctx (formula)
  uint64_t kv_bytes_llama = 0;  // the same as libllama's dry run sizes it (a cross-check)
  uint64_t compute_bytes = 0;   // compute buffers (libllama dry run)
  uint64_t overhead_bytes = 0;  // vocabulary tables, runtime and allocator slack
  uint64_t outputs_bytes = 0;   // embedding: the per-token output rows of one decode
  // With PlanOptions::mmproj_path: the projector's weights and its encoder's compute buffer
  // for the largest image, as llama.cpp's mtmd sizes them in a dry run.
  uint64_t projector_bytes = 0;
  // With PlanOptions::draft_path: the draft model's weights, its KV cache and compute buffers
  // at n_ctx and its overhead.
  uint64_t draft_bytes = 0;
  // weights + kv + compute + overhead (+ outputs, + projector, + draft)
  uint64_t total_bytes = 0;
  // Verdict.
  bool fits = false;
  int32_t max_ctx_that_fits = 0;  // 0 when even a 256-token context does not fit
  std::string advice;             // what to change when it does not fit (or "")
};

Result<MemoryPlan> plan_memory(const std::string& model_path, const PlanOptions& options = {});

// What the model is for. The seed (§2.1): 4-bit weights hold up for chat, summaries and
// intent detection; code and math lose accuracy at 4 bits and want 8.
enum class Task { kChat, kSummarize, kIntent, kCode, kMath };
const char* task_name(Task task);
Result<Task> task_from_name(const std::string& name);  // "chat", "summarize", "intent", ...

struct QuantAdvice {
  std::string quant;   // "Q4_K_M" or "Q8_0"
  std::string reason;
};
QuantAdvice quant_for_task(Task task);

// The seed's device-tier table, from the formula and from exact shapes: for every synth preset
// (0.5B-7B) x quantization, a header-only GGUF (SynthOptions::header_only: the real tensor
// table, no weights) is planned with plan_memory; parameter counts without a preset (2B, 4B,
// 8B) get the formula only.
struct TierOptions {
  std::vector<double> ram_gib = {6, 8, 12};
  std::vector<std::string> quants = {"Q4_K_M", "Q8_0"};
  int32_t n_ctx = 2048;
  int32_t n_batch = 512;
  KvType kv_type = KvType::kF16;
  double budget_fraction = 0.40;
  std::string vocab_path;   // tokenizer GGUF for the header-only files (as SynthOptions)
  std::string scratch_dir;  // where they are written and removed; "" = the temp directory
};

struct TierRow {
  std::string model;        // preset name, or e.g. "8B" for a formula-only row
  double params_b = 0;      // parameters, billions
  std::string quant;
  uint64_t formula_bytes = 0;
  uint64_t exact_bytes = 0;  // 0 for formula-only rows
  std::vector<bool> fits_formula, fits_exact;  // one per TierOptions::ram_gib
};

Result<std::vector<TierRow>> plan_tiers(const TierOptions& options);

// Nominal bits per weight of a quantization name ("Q4_K_M" -> 4, "F16" -> 16); 0 if unknown.
double nominal_bits(const std::string& quant);
// The seed's formula: params x bits / 8 x 1.2.
uint64_t formula_bytes(uint64_t n_params, double bits);

}  // namespace edgellm
