// LoraAdapter: loading through llama_adapter_lora_init after our own GGUF check.
#include "edgellm/lora.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/llama_glue.h"
#include "engine/lora_impl.h"
#include "engine/model_impl.h"
#include "engine/gguf_io.h"
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
  GgufPtr g(gguf_init_from_file(path.c_str(), params));
  GgmlPtr meta_owner(meta);
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

}  // namespace edgellm
