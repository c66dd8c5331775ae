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
  for (int i = 0; i < v.n_layer; ++i) {
    const std::string b = "v.blk." + std::to_string(i) + ".";
    t.push_back({b + "ln1.weight", d, 1, TensorSpec::kOnes});
    t.push_back({b + "ln1.bias", d, 1, TensorSpec::kBias});
    for (const char* w : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      t.push_back({b + w + ".weight", d, d, TensorSpec::kWeight});
      t.push_back({b + w + ".bias", d, 1, TensorSpec::kBias});
    }
    t.push_back({b + "ln2.weight", d, 1, TensorSpec::kOnes});
    t.push_back({b + "ln2.bias", d, 1, TensorSpec::kBias});
    t.push_back({b + "ffn_up.weight", d, ff, TensorSpec::kWeight});
    t.push_back({b + "ffn_up.bias", ff, 1, TensorSpec::kBias});
    t.push_back({b + "ffn_down.weight", ff, d, TensorSpec::kWeight});
    t.push_back({b + "ffn_down.bias", d, 1, TensorSpec::kBias});
  }
  t.push_back({"v.post_ln.weight", d, 1, TensorSpec::kOnes});
  t.push_back({"v.post_ln.bias", d, 1, TensorSpec::kBias});
  const int64_t f2 = static_cast<int64_t>(v.scale_factor) * v.scale_factor;
  t.push_back({"mm.model.fc.weight", d * f2, text_width, TensorSpec::kWeight});
  return t;
}

void set_vision_keys(const SynthPreset& p, gguf_context* out) {
  const SynthProjector& v = p.projector;
  auto u32 = [&](const char* key, int32_t val) {
    gguf_set_val_u32(out, key, static_cast<uint32_t>(val));
  };
  gguf_set_val_str(out, "general.architecture", "clip");
  gguf_set_val_str(out, "general.type", "mmproj");
  gguf_set_val_str(out, "general.name", ("edgellm-synth-" + p.name + "-mmproj").c_str());
  u32("general.file_type", 1);  // F16
  gguf_set_val_bool(out, "clip.has_vision_encoder", true);
  gguf_set_val_str(out, "clip.projector_type", v.type.c_str());
  u32("clip.vision.projection_dim", p.n_embd);
  u32("clip.vision.image_size", v.image_size);
  u32("clip.vision.patch_size", v.patch_size);
  u32("clip.vision.embedding_length", v.n_embd);
  u32("clip.vision.feed_forward_length", v.n_ff);
  u32("clip.vision.block_count", v.n_layer);
  u32("clip.vision.attention.head_count", v.n_head);
  gguf_set_val_f32(out, "clip.vision.attention.layer_norm_epsilon", v.eps);
  const float half[3] = {0.5f, 0.5f, 0.5f};  // SmolVLM's preprocessor: mean and std 0.5
  gguf_set_arr_data(out, "clip.vision.image_mean", GGUF_TYPE_FLOAT32, half, 3);
  gguf_set_arr_data(out, "clip.vision.image_std", GGUF_TYPE_FLOAT32, half, 3);
  u32("clip.vision.projector.scale_factor", v.scale_factor);
  gguf_set_val_bool(out, "clip.use_gelu", true);
  u32("clip.vision.preproc_image_size", v.preproc_image_size);
  gguf_set_val_str(out, "edgellm.synth.preset", p.name.c_str());
}

}  // namespace

Status write_mmproj(const SynthPreset& p, const SynthOptions& o, const std::string& path) {
  if (p.projector.type != "idefics3") {
    return Status::Internal("synth has no writer for projector type '" + p.projector.type + "'");
  }
  engine::ensure_backend();
  const std::vector<TensorSpec> specs = idefics3_specs(p.projector, p.n_embd);
  GgufPtr out(gguf_init_empty());
  set_vision_keys(p, out.get());
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
