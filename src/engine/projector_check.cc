// check_projector: what edgellm verifies in an mmproj GGUF before llama.cpp's clip.cpp reads
// it. clip.cpp reads each key with one exact type and ends in GGML_ASSERT (an abort of the
// whole app) on another, and builds its graph once at load, where a tensor of the wrong shape
// is another GGML_ASSERT. So: every clip.* key's type (the types clip.cpp's getters require,
// tools/mtmd/clip.cpp), and for the projector types edgellm knows, every tensor's shape and
// type against the file's own hyperparameters and the text model's width: idefics3 (SmolVLM),
// qwen2vl_merger (Qwen2-VL) and ultravox (Ultravox's Whisper encoder). Other projector types are refused until their
// shapes are checked too.
#include <functional>
#include <string>
#include <vector>

#include "engine/gguf_io.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"
#include "ggml.h"
#include "gguf.h"

namespace edgellm {
namespace {

bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// The type clip.cpp's getter for `key` requires (GGUF_TYPE_ARRAY: see array_element).
gguf_type expected_type(const std::string& key) {
  if (ends_with(key, "projector_type") || ends_with(key, "mm_patch_merge_type") ||
      ends_with(key, "model_variant")) {
    return GGUF_TYPE_STRING;
  }
  if (key.rfind("clip.has_", 0) == 0 || key.rfind("clip.use_", 0) == 0) return GGUF_TYPE_BOOL;
  if (key.find("epsilon") != std::string::npos) return GGUF_TYPE_FLOAT32;
  if (key == "clip.minicpmv_version") return GGUF_TYPE_INT32;
  return GGUF_TYPE_UINT32;
}

gguf_type array_element(const std::string& key) {
  return ends_with(key, "image_mean") || ends_with(key, "image_std") ? GGUF_TYPE_FLOAT32
                                                                     : GGUF_TYPE_INT32;
}

struct Shape {
  std::string name;
  int64_t ne[4];
  bool f32;  // must be F32 (norms, biases, embeddings added without a matmul)
  // F16 or F32: convolution kernels (im2col) and embeddings added, not multiplied.
  bool f16_or_f32 = false;
};

// The tensors a projector of one type must hold, and what to call it in an error.
struct Table {
  std::vector<Shape> shapes;
  std::string what;
};

using U32 = std::function<int64_t(const char*)>;

Status bad_file(const std::string& path, const std::string& why) {
  return Status::CorruptData(path + " is not a projector llama.cpp can load: " + why);
}

Status wrong_width(const std::string& path, const char* media, int64_t width, int64_t text) {
  return Status::InvalidArgument(path + " projects " + media + " to " + std::to_string(width) +
                                 "-wide embeddings, but the text model is " +
                                 std::to_string(text) + " wide: it was made for another model");
}

// A tower's pre-LN blocks (LayerNorms, attention with biases, a two-matrix FFN) and its
// final LayerNorm, under `prefix` ("v" or "a").
void add_blocks(std::vector<Shape>* s, const std::string& prefix, int64_t layers, int64_t d,
                int64_t ff, bool k_bias) {
  for (int64_t i = 0; i < layers; ++i) {
    const std::string b = prefix + ".blk." + std::to_string(i) + ".";
    for (const char* n : {"ln1", "ln2"}) {
      s->push_back({b + n + ".weight", {d, 1, 1, 1}, true});
      s->push_back({b + n + ".bias", {d, 1, 1, 1}, true});
    }
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      s->push_back({b + n + ".weight", {d, d, 1, 1}, false});
      if (k_bias || std::string(n) != "attn_k") {
        s->push_back({b + n + ".bias", {d, 1, 1, 1}, true});
      }
    }
    s->push_back({b + "ffn_up.weight", {d, ff, 1, 1}, false});
    s->push_back({b + "ffn_up.bias", {ff, 1, 1, 1}, true});
    s->push_back({b + "ffn_down.weight", {ff, d, 1, 1}, false});
    s->push_back({b + "ffn_down.bias", {d, 1, 1, 1}, true});
  }
  s->push_back({prefix + ".post_ln.weight", {d, 1, 1, 1}, true});
  s->push_back({prefix + ".post_ln.bias", {d, 1, 1, 1}, true});
}

// idefics3 (SmolVLM): synth_mmproj.cc writes the same table.
std::vector<Shape> idefics3_shapes(int64_t d, int64_t ff, int64_t layers, int64_t patch,
                                   int64_t image, int64_t scale, int64_t text) {
  std::vector<Shape> s;
  const int64_t grid = image / patch;
  s.push_back({"v.patch_embd.weight", {patch, patch, 3, d}, false, true});
  s.push_back({"v.patch_embd.bias", {d, 1, 1, 1}, true});
  s.push_back({"v.position_embd.weight", {d, grid * grid, 1, 1}, false, true});
  add_blocks(&s, "v", layers, d, ff, /*k_bias=*/true);
  s.push_back({"mm.model.fc.weight", {d * scale * scale, text, 1, 1}, false});
  return s;
}

Status idefics3_table(const U32& u32, const std::string& path, ggml_context* meta,
                      int32_t text_n_embd, Table* out) {
  const int64_t d = u32("clip.vision.embedding_length"), ff = u32("clip.vision.feed_forward_length"),
                layers = u32("clip.vision.block_count"), patch = u32("clip.vision.patch_size"),
                image = u32("clip.vision.image_size"),
                scale = u32("clip.vision.projector.scale_factor"),
                heads = u32("clip.vision.attention.head_count");
  if (d <= 0 || ff <= 0 || layers <= 0 || layers > 1024 || patch <= 0 || image <= 0 ||
      image % patch != 0 || scale < 2 || (image / patch) % scale != 0 || heads <= 0 ||
      d % heads != 0) {
    return bad_file(path, "its vision hyperparameters are missing or inconsistent "
                          "(embedding_length " + std::to_string(d) + ", head_count " +
                          std::to_string(heads) + ", block_count " + std::to_string(layers) +
                          ", image_size " + std::to_string(image) + ", patch_size " +
                          std::to_string(patch) + ", scale_factor " + std::to_string(scale) + ")");
  }
  const ggml_tensor* fc = ggml_get_tensor(meta, "mm.model.fc.weight");
  if (fc && fc->ne[1] != text_n_embd) return wrong_width(path, "images", fc->ne[1], text_n_embd);
  out->shapes = idefics3_shapes(d, ff, layers, patch, image, scale, text_n_embd);
  out->what = "an idefics3 projector with " + std::to_string(layers) + " blocks";
  return Status::Ok();
}

// qwen2vl_merger (Qwen2-VL): synth_mmproj.cc writes the same table. The converter writes the
// text width as clip.vision.feed_forward_length; the MLP's width is read from its tensor. The
// graph merges 2 x 2 patches (clip.vision.spatial_merge_size, default 2).
Status qwen2vl_table(const U32& u32, const std::string& path, ggml_context* meta,
                     int32_t text_n_embd, Table* out) {
  const int64_t d = u32("clip.vision.embedding_length"), layers = u32("clip.vision.block_count"),
                patch = u32("clip.vision.patch_size"), image = u32("clip.vision.image_size"),
                heads = u32("clip.vision.attention.head_count");
  const int64_t merge_key = u32("clip.vision.spatial_merge_size");
  const int64_t merge = merge_key < 0 ? 2 : merge_key;
  const ggml_tensor* up = ggml_get_tensor(meta, "v.blk.0.ffn_up.weight");
  const ggml_tensor* mm2 = ggml_get_tensor(meta, "mm.2.weight");
  // M-RoPE in the tower takes a quarter of each head's rotary pairs per section.
  if (d <= 0 || layers <= 0 || layers > 1024 || patch <= 0 || image <= 0 || heads <= 0 ||
      d % heads != 0 || (d / heads) % 4 != 0 || merge != 2) {
    return bad_file(path, "its vision hyperparameters are missing or inconsistent "
                          "(embedding_length " + std::to_string(d) + ", head_count " +
                          std::to_string(heads) + ", block_count " + std::to_string(layers) +
                          ", image_size " + std::to_string(image) + ", patch_size " +
                          std::to_string(patch) + ", spatial_merge_size " +
                          std::to_string(merge) + ")");
  }
  if (!up || !mm2) return bad_file(path, "it lacks the tower's MLP or the merger (mm.2)");
  if (mm2->ne[1] != text_n_embd) return wrong_width(path, "images", mm2->ne[1], text_n_embd);
  const int64_t ff = up->ne[1], merged = d * merge * merge;
  std::vector<Shape>& s = out->shapes;
  s.push_back({"v.patch_embd.weight", {patch, patch, 3, d}, false, true});
  s.push_back({"v.patch_embd.weight.1", {patch, patch, 3, d}, false, true});
  add_blocks(&s, "v", layers, d, ff, /*k_bias=*/true);
  s.push_back({"mm.0.weight", {merged, merged, 1, 1}, false});
  s.push_back({"mm.0.bias", {merged, 1, 1, 1}, true});
  s.push_back({"mm.2.weight", {merged, text_n_embd, 1, 1}, false});
  s.push_back({"mm.2.bias", {text_n_embd, 1, 1, 1}, true});
  out->what = "a qwen2vl_merger projector with " + std::to_string(layers) + " blocks";
  return Status::Ok();
}

// ultravox: Whisper's encoder (synth_mmproj.cc writes the same table) and Ultravox's
// projector. Whisper's graph takes 3000 mel frames (30 s) a chunk, 1500 positions after its
// strided convolution; the projector's width `hidden` is the file's own (even: SwiGLU halves it).
Status ultravox_table(const U32& u32, const std::string& path, ggml_context* meta,
                      int32_t text_n_embd, Table* out) {
  constexpr int64_t kPositions = 1500;
  const int64_t d = u32("clip.audio.embedding_length"), ff = u32("clip.audio.feed_forward_length"),
                layers = u32("clip.audio.block_count"), mel = u32("clip.audio.num_mel_bins"),
                heads = u32("clip.audio.attention.head_count"),
                stack = u32("clip.audio.projector.stack_factor");
  const ggml_tensor* mlp1 = ggml_get_tensor(meta, "mm.a.mlp.1.weight");
  const ggml_tensor* mlp2 = ggml_get_tensor(meta, "mm.a.mlp.2.weight");
  const ggml_tensor* pos = ggml_get_tensor(meta, "a.position_embd.weight");
  if (d <= 0 || ff <= 0 || layers <= 0 || layers > 1024 || mel <= 0 || mel > 256 ||
      heads <= 0 || d % heads != 0 || stack <= 0 || stack > 64) {
    return bad_file(path, "its audio hyperparameters are missing or inconsistent "
                          "(embedding_length " + std::to_string(d) + ", head_count " +
                          std::to_string(heads) + ", block_count " + std::to_string(layers) +
                          ", num_mel_bins " + std::to_string(mel) + ", stack_factor " +
                          std::to_string(stack) + ")");
  }
  if (!mlp1 || !mlp2 || !pos) {
    return bad_file(path, "it lacks Ultravox's projector (mm.a.mlp.1/2) or Whisper's positions");
  }
  const int64_t hidden = mlp1->ne[1];
  if (hidden <= 0 || hidden % 2 != 0) {
    return bad_file(path, "its projector's width " + std::to_string(hidden) + " is not even");
  }
  if (mlp2->ne[1] != text_n_embd) return wrong_width(path, "audio", mlp2->ne[1], text_n_embd);
  if (pos->ne[1] < kPositions || pos->ne[1] > 65536) {
    return bad_file(path, "a.position_embd.weight holds " + std::to_string(pos->ne[1]) +
                          " positions; Whisper's encoder needs " + std::to_string(kPositions));
  }
  std::vector<Shape>& s = out->shapes;
  s.push_back({"a.conv1d.1.weight", {3, mel, d, 1}, false, true});
  s.push_back({"a.conv1d.1.bias", {1, d, 1, 1}, true});
  s.push_back({"a.conv1d.2.weight", {3, d, d, 1}, false, true});
  s.push_back({"a.conv1d.2.bias", {1, d, 1, 1}, true});
  s.push_back({"a.position_embd.weight", {d, pos->ne[1], 1, 1}, false, true});
  add_blocks(&s, "a", layers, d, ff, /*k_bias=*/false);  // Whisper's keys have no bias
  s.push_back({"mm.a.norm_pre.weight", {d * stack, 1, 1, 1}, true});
  s.push_back({"mm.a.mlp.1.weight", {d * stack, hidden, 1, 1}, false});
  s.push_back({"mm.a.norm_mid.weight", {hidden / 2, 1, 1, 1}, true});
  s.push_back({"mm.a.mlp.2.weight", {hidden / 2, text_n_embd, 1, 1}, false});
  out->what = "an ultravox projector with " + std::to_string(layers) + " blocks";
  return Status::Ok();
}

}  // namespace

Status check_projector(const std::string& path, int32_t text_n_embd) {
  gguf_init_params ip{/*no_alloc=*/true, /*ctx=*/nullptr};
  ggml_context* meta = nullptr;
  ip.ctx = &meta;
  GgufPtr g(gguf_init_from_file(path.c_str(), ip));
  GgmlPtr meta_owner(meta);
  if (!g || !meta) return Status::CorruptData(path + " has a malformed GGUF header");
  auto bad = [&](const std::string& why) {
    return Status::CorruptData(path + " is not a projector llama.cpp can load: " + why);
  };
  const int64_t arch = gguf_find_key(g.get(), "general.architecture");
  const std::string arch_name =
      arch >= 0 && gguf_get_kv_type(g.get(), arch) == GGUF_TYPE_STRING
          ? gguf_get_val_str(g.get(), arch) : "";
  if (arch_name != "clip") {
    return Status::InvalidArgument(path + " is not a projector (mmproj) file: its architecture is '" +
                                   arch_name + "', not 'clip'; pass the model as the model and "
                                   "its mmproj file as the projector");
  }
  for (int64_t i = 0; i < gguf_get_n_kv(g.get()); ++i) {
    const std::string key = gguf_get_key(g.get(), i);
    if (key.rfind("clip.", 0) != 0) continue;
    const gguf_type t = gguf_get_kv_type(g.get(), i);
    if (t == GGUF_TYPE_ARRAY) {
      if (gguf_get_arr_type(g.get(), i) != array_element(key)) {
        return bad("key " + key + " holds " + gguf_type_name(gguf_get_arr_type(g.get(), i)) +
                   " values, not " + gguf_type_name(array_element(key)));
      }
    } else if (t != expected_type(key)) {
      return bad("key " + key + " is " + gguf_type_name(t) + ", not " +
                 gguf_type_name(expected_type(key)));
    }
  }
  auto u32 = [&](const char* key) -> int64_t {
    const int64_t id = gguf_find_key(g.get(), key);
    return id < 0 ? -1 : static_cast<int64_t>(gguf_get_val_u32(g.get(), id));
  };
  const int64_t type_id = gguf_find_key(g.get(), "clip.projector_type");
  const std::string type = type_id >= 0 ? gguf_get_val_str(g.get(), type_id) : "";
  Table table;
  if (type == "idefics3") {
    EDGELLM_RETURN_IF_ERROR(idefics3_table(u32, path, meta, text_n_embd, &table));
  } else if (type == "qwen2vl_merger") {
    EDGELLM_RETURN_IF_ERROR(qwen2vl_table(u32, path, meta, text_n_embd, &table));
  } else if (type == "ultravox") {
    EDGELLM_RETURN_IF_ERROR(ultravox_table(u32, path, meta, text_n_embd, &table));
  } else {
    return Status::FailedPrecondition(
        path + " is a '" + (type.empty() ? std::string("(unnamed)") : type) +
        "' projector; edgellm checks a projector's tensors before loading it and knows "
        "'idefics3' (SmolVLM), 'qwen2vl_merger' (Qwen2-VL) and 'ultravox' (Ultravox's Whisper "
        "encoder) so far");
  }
  const std::vector<Shape>& shapes = table.shapes;
  // clip.cpp also looks up optional tensors (a pre-norm, gates, ...): one it finds with a shape
  // its graph does not expect aborts too, so the file holds these tensors and no others.
  if (gguf_get_n_tensors(g.get()) != static_cast<int64_t>(shapes.size())) {
    return bad("it has " + std::to_string(gguf_get_n_tensors(g.get())) + " tensors, not the " +
               std::to_string(shapes.size()) + " of " + table.what);
  }
  for (const Shape& s : shapes) {
    const ggml_tensor* t = ggml_get_tensor(meta, s.name.c_str());
    if (!t) return bad("tensor " + s.name + " is missing");
    for (int k = 0; k < 4; ++k) {
      if (t->ne[k] != s.ne[k]) {
        return bad("tensor " + s.name + " has shape [" + std::to_string(t->ne[0]) + ", " +
                   std::to_string(t->ne[1]) + ", " + std::to_string(t->ne[2]) + ", " +
                   std::to_string(t->ne[3]) + "], not the one its hyperparameters give");
      }
    }
    if (s.f32 && t->type != GGML_TYPE_F32) {
      return bad("tensor " + s.name + " is " + ggml_type_name(t->type) + ", not F32");
    }
    if (!s.f32 && s.f16_or_f32 && t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16) {
      return bad("tensor " + s.name + " is " + ggml_type_name(t->type) + ", not F16 or F32");
    }
  }
  return Status::Ok();
}

}  // namespace edgellm
