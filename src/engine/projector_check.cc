// check_projector: what edgellm verifies in an mmproj GGUF before llama.cpp's clip.cpp reads
// it. clip.cpp reads each key with one exact type and ends in GGML_ASSERT (an abort of the
// whole app) on another, and builds its graph once at load, where a tensor of the wrong shape
// is another GGML_ASSERT. So: every clip.* key's type (the types clip.cpp's getters require,
// tools/mtmd/clip.cpp), and for the projector types edgellm knows, every tensor's shape and
// type against the file's own hyperparameters and the text model's width. Other projector
// types are refused until their shapes are checked too.
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
};

// idefics3 (SmolVLM): synth_mmproj.cc writes the same table.
std::vector<Shape> idefics3_shapes(int64_t d, int64_t ff, int64_t layers, int64_t patch,
                                   int64_t image, int64_t scale, int64_t text) {
  std::vector<Shape> s;
  const int64_t grid = image / patch;
  s.push_back({"v.patch_embd.weight", {patch, patch, 3, d}, false});
  s.push_back({"v.patch_embd.bias", {d, 1, 1, 1}, true});
  s.push_back({"v.position_embd.weight", {d, grid * grid, 1, 1}, false});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string b = "v.blk." + std::to_string(i) + ".";
    for (const char* n : {"ln1", "ln2"}) {
      s.push_back({b + n + ".weight", {d, 1, 1, 1}, true});
      s.push_back({b + n + ".bias", {d, 1, 1, 1}, true});
    }
    for (const char* n : {"attn_q", "attn_k", "attn_v", "attn_out"}) {
      s.push_back({b + n + ".weight", {d, d, 1, 1}, false});
      s.push_back({b + n + ".bias", {d, 1, 1, 1}, true});
    }
    s.push_back({b + "ffn_up.weight", {d, ff, 1, 1}, false});
    s.push_back({b + "ffn_up.bias", {ff, 1, 1, 1}, true});
    s.push_back({b + "ffn_down.weight", {ff, d, 1, 1}, false});
    s.push_back({b + "ffn_down.bias", {d, 1, 1, 1}, true});
  }
  s.push_back({"v.post_ln.weight", {d, 1, 1, 1}, true});
  s.push_back({"v.post_ln.bias", {d, 1, 1, 1}, true});
  s.push_back({"mm.model.fc.weight", {d * scale * scale, text, 1, 1}, false});
  return s;
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
  if (type != "idefics3") {
    return Status::FailedPrecondition(
        path + " is a '" + (type.empty() ? std::string("(unnamed)") : type) +
        "' projector; edgellm checks a projector's tensors before loading it and knows "
        "'idefics3' (SmolVLM) so far");
  }
  const int64_t d = u32("clip.vision.embedding_length"), ff = u32("clip.vision.feed_forward_length"),
                layers = u32("clip.vision.block_count"), patch = u32("clip.vision.patch_size"),
                image = u32("clip.vision.image_size"),
                scale = u32("clip.vision.projector.scale_factor");
  if (d <= 0 || ff <= 0 || layers <= 0 || layers > 1024 || patch <= 0 || image <= 0 ||
      image % patch != 0 || scale < 2 || (image / patch) % scale != 0) {
    return bad("its vision hyperparameters are missing or inconsistent (embedding_length " +
               std::to_string(d) + ", block_count " + std::to_string(layers) + ", image_size " +
               std::to_string(image) + ", patch_size " + std::to_string(patch) +
               ", scale_factor " + std::to_string(scale) + ")");
  }
  const int64_t fc = gguf_find_tensor(g.get(), "mm.model.fc.weight");
  if (fc >= 0) {
    const ggml_tensor* t = ggml_get_tensor(meta, "mm.model.fc.weight");
    if (t && t->ne[1] != text_n_embd) {
      return Status::InvalidArgument(path + " projects images to " + std::to_string(t->ne[1]) +
                                     "-wide embeddings, but the text model is " +
                                     std::to_string(text_n_embd) +
                                     " wide: it was made for another model");
    }
  }
  const std::vector<Shape> shapes = idefics3_shapes(d, ff, layers, patch, image, scale, text_n_embd);
  // clip.cpp also looks up optional tensors (a pre-norm, gates, ...): one it finds with a shape
  // its graph does not expect aborts too, so the file holds these tensors and no others.
  if (gguf_get_n_tensors(g.get()) != static_cast<int64_t>(shapes.size())) {
    return bad("it has " + std::to_string(gguf_get_n_tensors(g.get())) + " tensors, not the " +
               std::to_string(shapes.size()) + " of an idefics3 projector with " +
               std::to_string(layers) + " blocks");
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
    if (!s.f32 && t->type != GGML_TYPE_F32 && t->type != GGML_TYPE_F16 &&
        (s.name == "v.patch_embd.weight" || s.name == "v.position_embd.weight")) {
      return bad("tensor " + s.name + " is " + ggml_type_name(t->type) + ", not F16 or F32");
    }
  }
  return Status::Ok();
}

}  // namespace edgellm
