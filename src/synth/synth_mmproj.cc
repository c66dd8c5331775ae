// write_mmproj: a projector GGUF (llama.cpp's "mmproj", read by tools/mtmd's clip.cpp) with
// random weights, for a multimodal preset. The keys, tensor names, shapes and types are the
// ones llama.cpp's converter writes for the real model (docs/multimodal-research.md has the
// sources); clip.cpp reads each key with one exact type and aborts on another, so every
// integer here is UINT32, every epsilon FLOAT32 and mean/std FLOAT32 arrays.
#include <string>
#include <vector>

#include "core/sys.h"
#include "engine/gguf_io.h"
#include "engine/llama_glue.h"
#include "synth/synth_impl.h"

namespace edgellm {
namespace {

// A tower's pre-LN blocks (ln1, attn_q/k/v/out with biases, ln2, ffn_up/down with biases)
// and its final LayerNorm, under `prefix` ("v" or "a"); `k_bias` false: no bias on attn_k.
void add_blocks(std::vector<TensorSpec>* t, const std::string& prefix, int n_layer, int64_t d,
                int64_t ff, bool k_bias) {
  for (int i = 0; i < n_layer; ++i) {
    const std::string b = prefix + ".blk." + std::to_string(i) + ".";
    t->push_back({b + "ln1.weight", d, 1, TensorSpec::kOnes});
    t->push_back({b + "ln1.bias", d, 1, TensorSpec::kBias});
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      t->push_back({b + w + ".weight", d, d, TensorSpec::kWeight});
      if (k_bias || std::string(w) != "attn_k") {
        t->push_back({b + w + ".bias", d, 1, TensorSpec::kBias});
      }
    }
    t->push_back({b + "ln2.weight", d, 1, TensorSpec::kOnes});
    t->push_back({b + "ln2.bias", d, 1, TensorSpec::kBias});
    t->push_back({b + "ffn_up.weight", d, ff, TensorSpec::kWeight});
    t->push_back({b + "ffn_up.bias", ff, 1, TensorSpec::kBias});
    t->push_back({b + "ffn_down.weight", ff, d, TensorSpec::kWeight});
    t->push_back({b + "ffn_down.bias", d, 1, TensorSpec::kBias});
  }
  t->push_back({prefix + ".post_ln.weight", d, 1, TensorSpec::kOnes});
  t->push_back({prefix + ".post_ln.bias", d, 1, TensorSpec::kBias});
}

// idefics3 (SmolVLM): a SigLIP tower and the connector's one linear map.
//   v.patch_embd     [P, P, 3, D] conv kernel and its bias; v.position_embd [D, (S/P)^2]
//   v.blk.N.*        pre-LN blocks: ln1, attn_q/k/v/out, ln2, ffn_up/down (all with biases)
//   v.post_ln        the final LayerNorm
//   mm.model.fc      [D * f^2, text width] (no bias): the unshuffled patches to the text
// Patch and position embeddings are F32 (SmolVLM's converter keeps every ".embeddings."
// tensor F32), norms and biases F32, matrices F16.
std::vector<TensorSpec> idefics3_specs(const SynthProjector& v, int32_t text_width) {
  const int64_t d = v.n_embd, ff = v.n_ff, grid = v.image_size / v.patch_size;
  std::vector<TensorSpec> t;
  TensorSpec patch{"v.patch_embd.weight", v.patch_size, v.patch_size, TensorSpec::kWeight, true};
  patch.ne2 = 3;
  patch.ne3 = d;
  t.push_back(patch);
  t.push_back({"v.patch_embd.bias", d, 1, TensorSpec::kBias});
  t.push_back({"v.position_embd.weight", d, grid * grid, TensorSpec::kWeight, true});
  add_blocks(&t, "v", v.n_layer, d, ff, /*k_bias=*/true);
  const int64_t f2 = static_cast<int64_t>(v.scale_factor) * v.scale_factor;
  t.push_back({"mm.model.fc.weight", d * f2, text_width, TensorSpec::kWeight});
  return t;
}

// qwen2vl_merger (Qwen2-VL): the converter splits the Conv3D patch embedding (two frames) into
// two Conv2D kernels and the fused QKV into attn_q/k/v; the merger's LayerNorm is v.post_ln.
//   v.patch_embd.weight, v.patch_embd.weight.1  [P, P, 3, D] (no bias, no learned positions)
//   v.blk.N.*        pre-LN blocks as idefics3's (quick GELU, 2D rotary positions)
//   v.post_ln        the merger's LayerNorm
//   mm.0             [D * merge^2, D * merge^2] and its bias; GELU; mm.2 [D * merge^2, text]
std::vector<TensorSpec> qwen2vl_specs(const SynthProjector& v, int32_t text_width) {
  const int64_t d = v.n_embd, merged = d * v.scale_factor * v.scale_factor;
  std::vector<TensorSpec> t;
  for (const char* name : {"v.patch_embd.weight", "v.patch_embd.weight.1"}) {
    TensorSpec patch{name, v.patch_size, v.patch_size, TensorSpec::kWeight};
    patch.ne2 = 3;
    patch.ne3 = d;
    t.push_back(patch);
  }
  add_blocks(&t, "v", v.n_layer, d, v.n_ff, /*k_bias=*/true);
  t.push_back({"mm.0.weight", merged, merged, TensorSpec::kWeight});
  t.push_back({"mm.0.bias", merged, 1, TensorSpec::kBias});
  t.push_back({"mm.2.weight", merged, text_width, TensorSpec::kWeight});
  t.push_back({"mm.2.bias", text_width, 1, TensorSpec::kBias});
  return t;
}

// ultravox (Ultravox v0.5): a Whisper encoder and Ultravox's projector.
//   a.conv1d.1       [3, mel, D] kernel (F16) and its bias [1, D]; a.conv1d.2 [3, D, D], [1, D]
//                    (the converter stores conv biases as columns)
//   a.position_embd  [D, 1500]: Whisper's learned positions (30 s of 10 ms frames, halved)
//   a.blk.N.*        pre-LN blocks: ln1, attn_q (bias), attn_k (no bias), attn_v (bias),
//                    attn_out (bias), ln2, ffn_up/down (biases)
//   a.post_ln        the final LayerNorm
//   mm.a.norm_pre    [D * stack]: RMS norm weights over the stacked frames
//   mm.a.mlp.1       [D * stack, hidden] (no bias), SwiGLU halves it
//   mm.a.norm_mid    [hidden / 2]; mm.a.mlp.2 [hidden / 2, text width] (no bias)
constexpr int64_t kWhisperPositions = 1500;

std::vector<TensorSpec> ultravox_specs(const SynthProjector& a, int32_t text_width) {
  const int64_t d = a.n_embd, ff = a.n_ff;
  std::vector<TensorSpec> t;
  TensorSpec conv1{"a.conv1d.1.weight", 3, a.n_mel_bins, TensorSpec::kWeight};
  conv1.ne2 = d;
  t.push_back(conv1);
  t.push_back({"a.conv1d.1.bias", 1, d, TensorSpec::kBias, true});
  TensorSpec conv2{"a.conv1d.2.weight", 3, d, TensorSpec::kWeight};
  conv2.ne2 = d;
  t.push_back(conv2);
  t.push_back({"a.conv1d.2.bias", 1, d, TensorSpec::kBias, true});
  t.push_back({"a.position_embd.weight", d, kWhisperPositions, TensorSpec::kWeight, true});
  add_blocks(&t, "a", a.n_layer, d, ff, /*k_bias=*/false);
  const int64_t stacked = d * a.stack_factor, mid = a.proj_hidden / 2;
  t.push_back({"mm.a.norm_pre.weight", stacked, 1, TensorSpec::kOnes});
  t.push_back({"mm.a.mlp.1.weight", stacked, a.proj_hidden, TensorSpec::kWeight});
  t.push_back({"mm.a.norm_mid.weight", mid, 1, TensorSpec::kOnes});
  t.push_back({"mm.a.mlp.2.weight", mid, text_width, TensorSpec::kWeight});
  return t;
}

void set_common_keys(const SynthPreset& p, gguf_context* out) {
  gguf_set_val_str(out, "general.architecture", "clip");
  gguf_set_val_str(out, "general.type", "mmproj");
  gguf_set_val_str(out, "general.name", ("edgellm-synth-" + p.name + "-mmproj").c_str());
  gguf_set_val_u32(out, "general.file_type", 1);  // F16
  gguf_set_val_str(out, "clip.projector_type", p.projector.type.c_str());
  gguf_set_val_str(out, "edgellm.synth.preset", p.name.c_str());
}

void set_u32(gguf_context* out, const std::string& key, int32_t val) {
  gguf_set_val_u32(out, key.c_str(), static_cast<uint32_t>(val));
}

// The common keys and the tower's shape under clip.<modality>.* ("vision" or "audio"), as the
// converter's MmprojModel writes them.
void set_tower_keys(const SynthPreset& p, const std::string& modality, gguf_context* out) {
  const SynthProjector& t = p.projector;
  const std::string k = "clip." + modality + ".";
  set_common_keys(p, out);
  gguf_set_val_bool(out, ("clip.has_" + modality + "_encoder").c_str(), true);
  set_u32(out, k + "projection_dim", p.n_embd);
  set_u32(out, k + "embedding_length", t.n_embd);
  set_u32(out, k + "feed_forward_length", t.n_ff);
  set_u32(out, k + "block_count", t.n_layer);
  set_u32(out, k + "attention.head_count", t.n_head);
  gguf_set_val_f32(out, (k + "attention.layer_norm_epsilon").c_str(), t.eps);
}

// Ultravox's encoder class adds the mel bins and the stack factor.
void set_audio_keys(const SynthPreset& p, gguf_context* out) {
  set_tower_keys(p, "audio", out);
  set_u32(out, "clip.audio.num_mel_bins", p.projector.n_mel_bins);
  set_u32(out, "clip.audio.projector.stack_factor", p.projector.stack_factor);
}

void set_vision_keys(const SynthPreset& p, gguf_context* out) {
  const SynthProjector& v = p.projector;
  auto u32 = [&](const char* key, int32_t val) { set_u32(out, key, val); };
  set_tower_keys(p, "vision", out);
  u32("clip.vision.image_size", v.image_size);
  u32("clip.vision.patch_size", v.patch_size);
  if (v.type == "qwen2vl_merger") {
    // The converter writes config.json's vision "hidden_size" (the merger's output, the text
    // width) as the feed-forward length; the MLP's real width is its tensors'.
    u32("clip.vision.feed_forward_length", p.n_embd);
    // Qwen2-VL's preprocessor: OpenAI CLIP's mean and std; quick GELU (neither flag).
    const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    const float std_[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    gguf_set_arr_data(out, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, mean, 3);
    gguf_set_arr_data(out, "clip.vision.image_std", GGUF_TYPE_FLOAT32, std_, 3);
    return;
  }
  const float half[3] = {0.5f, 0.5f, 0.5f};  // SmolVLM's preprocessor: mean and std 0.5
  gguf_set_arr_data(out, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, half, 3);
  gguf_set_arr_data(out, "clip.vision.image_std", GGUF_TYPE_FLOAT32, half, 3);
  u32("clip.vision.projector.scale_factor", v.scale_factor);
  gguf_set_val_bool(out, "clip.use_gelu", true);
  u32("clip.vision.preproc_image_size", v.preproc_image_size);
}

}  // namespace

Status write_mmproj(const SynthPreset& p, const SynthOptions& o, const std::string& path) {
  const std::string& type = p.projector.type;
  const bool audio = type == "ultravox";
  if (type != "idefics3" && type != "qwen2vl_merger" && !audio) {
    return Status::Internal("synth has no writer for projector type '" + type + "'");
  }
  engine::ensure_backend();
  const std::vector<TensorSpec> specs = audio ? ultravox_specs(p.projector, p.n_embd)
                                        : type == "qwen2vl_merger"
                                            ? qwen2vl_specs(p.projector, p.n_embd)
                                            : idefics3_specs(p.projector, p.n_embd);
  GgufPtr out(gguf_init_empty());
  if (audio) {
    set_audio_keys(p, out.get());
  } else {
    set_vision_keys(p, out.get());
  }
  gguf_set_val_u64(out.get(), "edgellm.synth.seed", o.seed);
  ggml_init_params ip{specs.size() * ggml_tensor_overhead() + 1024, nullptr, /*no_alloc=*/true};
  GgmlPtr gctx(ggml_init(ip));
  uint64_t total = 0;
  const auto tensors = add_tensor_table(specs, /*f32=*/false, gctx.get(), out.get(), &total);
  // A seed of its own: the projector's tensors never share a stream with the text model's.
  return write_random_gguf(out.get(), specs, tensors, total, o.seed ^ 0x6d6d70726f6aULL, path,
                           "mmproj", o.on_progress);
}

}  // namespace edgellm
