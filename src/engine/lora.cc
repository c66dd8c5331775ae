// LoraAdapter (loading through llama_adapter_lora_init after our own GGUF check) and
// synth_lora (random adapters at a synth preset's shapes).
#include "edgellm/lora.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "edgellm/synth.h"
#include "engine/llama_glue.h"
#include "engine/lora_impl.h"
#include "engine/model_impl.h"
#include "engine/ggml_ptr.h"
#include "core/rng.h"
#include "ggml.h"
#include "gguf.h"

namespace edgellm {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Reads what LoraInfo reports, and refuses files llama.cpp would reject with less helpful
// words (or that are not adapters at all, e.g. a base model passed by mistake).
Status read_lora_header(const std::string& path, LoraInfo* info) {
  ggml_context* meta = nullptr;
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/&meta};
  std::unique_ptr<gguf_context, GgufFree> g(gguf_init_from_file(path.c_str(), params));
  std::unique_ptr<ggml_context, GgmlFree> meta_owner(meta);
  if (!g) {
    return Status::CorruptData(path + " has a malformed GGUF header: the adapter file is damaged");
  }
  auto str = [&](const char* key) -> std::string {
    const int64_t id = gguf_find_key(g.get(), key);
    if (id < 0 || gguf_get_kv_type(g.get(), id) != GGUF_TYPE_STRING) return "";
    return gguf_get_val_str(g.get(), id);
  };
  const std::string type = str("general.type");
  if (type != "adapter" || str("adapter.type") != "lora") {
    return Status::InvalidArgument(
        path + " is not a LoRA adapter (general.type '" + type +
        "'): pass a GGUF LoRA, e.g. one written by llama.cpp's convert_lora_to_gguf.py or "
        "`edgellm synth --lora`");
  }
  info->arch = str("general.architecture");
  const int64_t alpha_id = gguf_find_key(g.get(), "adapter.lora.alpha");
  if (alpha_id >= 0 && gguf_get_kv_type(g.get(), alpha_id) == GGUF_TYPE_FLOAT32) {
    info->alpha = gguf_get_val_f32(g.get(), alpha_id);
  }
  for (ggml_tensor* t = ggml_get_first_tensor(meta); t; t = ggml_get_next_tensor(meta, t)) {
    const std::string name = ggml_get_name(t);
    if (!ends_with(name, ".lora_a")) continue;
    if (info->n_pairs++ == 0) info->rank = static_cast<int32_t>(t->ne[1]);
  }
  if (info->n_pairs == 0) {
    return Status::InvalidArgument(path + " holds no LoRA tensor pairs (*.lora_a / *.lora_b)");
  }
  return Status::Ok();
}

}  // namespace

LoraAdapter::Impl::~Impl() {
  // A Model frees its adapters with it; free ours only while the Model lives.
  if (adapter && !model_alive.expired()) llama_adapter_lora_free(adapter);
}

LoraAdapter::LoraAdapter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LoraAdapter::~LoraAdapter() = default;
const LoraInfo& LoraAdapter::info() const { return impl_->info; }

Result<std::shared_ptr<LoraAdapter>> LoraAdapter::Load(const Model& model,
                                                       const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  if (model.info().metadata_only) {
    return Status::InvalidArgument("model " + model.info().path +
                                   " was loaded without weights: a LoRA needs the full model");
  }
  auto impl = std::make_unique<Impl>();
  impl->info.path = path;
  EDGELLM_RETURN_IF_ERROR(precheck_gguf(path, &impl->info.file_bytes));
  EDGELLM_RETURN_IF_ERROR(read_lora_header(path, &impl->info));
  if (impl->info.arch != model.info().arch) {
    return Status::InvalidArgument("LoRA " + path + " is for architecture '" + impl->info.arch +
                                   "', the model is '" + model.info().arch + "'");
  }
  engine::take_llama_errors();
  try {
    impl->adapter = llama_adapter_lora_init(model.impl()->model, path.c_str());
  } catch (const std::exception&) {
    impl->adapter = nullptr;
  }
  if (!impl->adapter) {
    const std::string why = engine::take_llama_errors();
    return Status::InvalidArgument("cannot apply LoRA " + path + " to " + model.info().path +
                                   (why.empty() ? std::string() : ": " + why) +
                                   " (an adapter trained for another base model?)");
  }
  impl->model = model.impl();
  impl->model_alive = model.impl()->alive;
  impl->info.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<LoraAdapter>(new LoraAdapter(std::move(impl)));
}

Status synth_lora(const SynthLoraOptions& o) {
  Result<SynthPreset> preset = find_synth_preset(o.preset);
  if (!preset.ok()) return preset.status();
  const SynthPreset& p = *preset;
  if (o.output.empty()) return Status::InvalidArgument("no output path: pass -o FILE.gguf");
  if (o.rank < 1 || o.rank > 256) return Status::InvalidArgument("--rank must be in 1..256");
  if (!std::isfinite(o.alpha) || o.alpha <= 0) {
    return Status::InvalidArgument("--alpha must be a positive number");
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
  std::unique_ptr<ggml_context, GgmlFree> ctx(ggml_init(ip));
  std::unique_ptr<gguf_context, GgufFree> out(gguf_init_empty());
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
  const std::string tmp = o.output + ".partial." + std::to_string(::getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Status::Unavailable("cannot create " + tmp + ": " + std::strerror(errno));
  std::vector<uint8_t> meta(gguf_get_meta_size(out.get()));
  gguf_get_meta_data(out.get(), meta.data());
  bool ok = std::fwrite(meta.data(), 1, meta.size(), f) == meta.size();
  // Uniform A and B with std 0.06: with rank 8 and alpha/rank 2 the delta's entries have a
  // std near 0.02, the size of the synth base weights, so the adapter visibly steers output.
  const float amp = 0.06f * std::sqrt(3.0f);
  const size_t align = gguf_get_alignment(out.get());
  const char zeros[64] = {};
  std::vector<float> vals;
  for (size_t i = 0; ok && i < tensors.size(); ++i) {
    const int64_t n = ggml_nelements(tensors[i]);
    vals.resize(static_cast<size_t>(n));
    SplitMix64 rng{o.seed * 0x9E3779B97F4A7C15ull + i * 0xD1B54A32D192ED03ull};
    for (int64_t k = 0; k < n; ++k) {
      vals[static_cast<size_t>(k)] = (rng.uniform() * 2.0f - 1.0f) * amp;
    }
    const size_t nbytes = ggml_nbytes(tensors[i]);
    ok = std::fwrite(vals.data(), 1, nbytes, f) == nbytes;
    const size_t pad = (align - nbytes % align) % align;
    if (ok && pad) ok = std::fwrite(zeros, 1, pad, f) == pad;
  }
  ok = (std::fflush(f) == 0) && ok;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    return Status::ResourceExhausted("writing " + o.output + " failed: check free disk space");
  }
  if (std::rename(tmp.c_str(), o.output.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::Unavailable("cannot move the adapter into place at " + o.output + ": " +
                               std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace edgellm
