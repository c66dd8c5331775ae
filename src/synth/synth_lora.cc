// synth_lora: a LoRA adapter with deterministic random weights at a synth preset's shapes
// (every attention and FFN projection), so LoRA loading and swapping can be tested and
// benchmarked without a trained adapter.
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "edgellm/synth.h"
#include "engine/gguf_io.h"
#include "engine/llama_glue.h"

namespace edgellm {

Status synth_lora(const SynthLoraOptions& o) {
  Result<SynthPreset> preset = find_synth_preset(o.preset);
  if (!preset.ok()) return preset.status();
  const SynthPreset& p = *preset;
  if (o.output.empty()) return Status::InvalidArgument("no output path: pass -o FILE.gguf");
  if (o.rank < 1 || o.rank > 256) return Status::InvalidArgument("--rank must be in 1..256");
  if (!std::isfinite(o.alpha) || o.alpha <= 0) {
    return Status::InvalidArgument("--alpha must be a positive number");
  }
  if (p.arch != "qwen2") {
    return Status::InvalidArgument("LoRA adapters are for the chat presets (Qwen2); " + p.name +
                                   " is a " + p.arch + " model");
  }
  engine::ensure_backend();
  const int64_t head_dim = p.n_embd / p.n_head;
  const int64_t n_kv = head_dim * p.n_head_kv;
  struct Target {
    const char* name;
    int64_t n_in, n_out;
  };
  const Target targets[] = {{"attn_q", p.n_embd, p.n_embd},    {"attn_k", p.n_embd, n_kv},
                            {"attn_v", p.n_embd, n_kv},        {"attn_output", p.n_embd, p.n_embd},
                            {"ffn_gate", p.n_embd, p.n_ff},    {"ffn_up", p.n_embd, p.n_ff},
                            {"ffn_down", p.n_ff, p.n_embd}};
  const size_t n_tensors = static_cast<size_t>(p.n_layer) * std::size(targets) * 2;
  ggml_init_params ip{n_tensors * ggml_tensor_overhead() + 1024, nullptr, /*no_alloc=*/true};
  GgmlPtr ctx(ggml_init(ip));
  GgufPtr out(gguf_init_empty());
  gguf_set_val_str(out.get(), "general.architecture", "qwen2");
  gguf_set_val_str(out.get(), "general.type", "adapter");
  gguf_set_val_str(out.get(), "general.name", ("edgellm-synth-lora-" + p.name).c_str());
  gguf_set_val_str(out.get(), "adapter.type", "lora");
  gguf_set_val_f32(out.get(), "adapter.lora.alpha", o.alpha);
  gguf_set_val_str(out.get(), "edgellm.synth.preset", p.name.c_str());
  gguf_set_val_u64(out.get(), "edgellm.synth.seed", o.seed);
  std::vector<ggml_tensor*> tensors;
  for (int32_t l = 0; l < p.n_layer; ++l) {
    for (const Target& t : targets) {
      const std::string base = "blk." + std::to_string(l) + "." + t.name + ".weight";
      // llama.cpp's layout: A is [n_in, rank], B is [rank, n_out] (ggml ne order).
      ggml_tensor* a = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, t.n_in, o.rank);
      ggml_tensor* b = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, o.rank, t.n_out);
      ggml_set_name(a, (base + ".lora_a").c_str());
      ggml_set_name(b, (base + ".lora_b").c_str());
      gguf_add_tensor(out.get(), a);
      gguf_add_tensor(out.get(), b);
      tensors.push_back(a);
      tensors.push_back(b);
    }
  }
  AtomicFile file(o.output);
  GgufStreamWriter w;
  EDGELLM_RETURN_IF_ERROR(w.Open(out.get(), file.path()));
  // Uniform A and B with std 0.06: with rank 8 and alpha/rank 2 the delta's entries have a
  // std near 0.02, the size of the synth base weights, so the adapter visibly steers output.
  const float amp = 0.06f * std::sqrt(3.0f);
  std::vector<float> vals;
  for (size_t i = 0; w.ok() && i < tensors.size(); ++i) {
    vals.resize(static_cast<size_t>(ggml_nelements(tensors[i])));
    SplitMix64 rng = SplitMix64::stream(o.seed, i);
    for (float& v : vals) v = (rng.uniform() * 2.0f - 1.0f) * amp;
    w.Write(vals.data(), ggml_nbytes(tensors[i]));
    w.EndTensor();
  }
  EDGELLM_RETURN_IF_ERROR(w.Close());
  return file.Commit("the adapter");
}

}  // namespace edgellm
