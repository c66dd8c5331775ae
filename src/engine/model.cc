#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <exception>
#include <fstream>
#include <vector>

#include "core/log.h"
#include "core/sys.h"
#include "edgellm/gguf_check.h"
#include "store/sha256.h"
#include "engine/llama_glue.h"
#include "engine/model_impl.h"

namespace edgellm {
namespace {

std::string meta_str(const llama_model* m, const char* key) {
  char buf[256];
  const int32_t n = llama_model_meta_val_str(m, key, buf, sizeof(buf));
  return n < 0 ? std::string() : std::string(buf);
}

// Drops this process's resident pages of the model file's mapping during an mmap load.
//
// llama.cpp's CPU backend repacks many quantized weights (Q4_K, Q4_0, ...) into its own
// interleaved layout: those tensors are read from the mapping once, copied into an anonymous
// buffer, and never read from the file again; llama.cpp only unmaps the file's head and tail,
// so the pages of the copied tensors stay resident next to their copies (measured: +582 MiB
// peak on a 1.5B Q4_K_M, 60% of its weights). Between tensors the loader calls the progress
// callback; there every page of the mapping is dropped with MADV_DONTNEED. The mapping is
// read-only and shared, so this loses nothing: tensors that do live in the mapping fault back
// in from the page cache on first use (the warm-up), and only they stay resident.
class MappedPageDropper {
 public:
  MappedPageDropper(dev_t dev, ino_t ino) : dev_(dev), ino_(ino) {}

  void Drop() {
    if (!found_) found_ = Find();
    if (!found_) return;
    ::madvise(reinterpret_cast<void*>(begin_), end_ - begin_, MADV_DONTNEED);
  }

 private:
  // The mapping of (dev, ino) in /proc/self/maps; llama.cpp maps the whole file once.
  bool Find() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
      uintptr_t b = 0, e = 0;
      unsigned maj = 0, min = 0;
      unsigned long long off = 0, ino = 0;
      char perms[8] = {};
      if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " %7s %llx %x:%x %llu", &b, &e, perms,
                      &off, &maj, &min, &ino) != 7) {
        continue;
      }
      if (ino == ino_ && maj == major(dev_) && min == minor(dev_) && perms[0] == 'r') {
        begin_ = b;
        end_ = e;
        return true;
      }
    }
    return false;
  }

  dev_t dev_;
  ino_t ino_;
  bool found_ = false;
  uintptr_t begin_ = 0, end_ = 0;
};

struct ProgressCtx {
  const std::function<bool(float)>* cb;
  MappedPageDropper* dropper = nullptr;
  bool cancelled = false;
};

bool progress_trampoline(float p, void* user) {
  auto* ctx = static_cast<ProgressCtx*>(user);
  if (ctx->dropper) ctx->dropper->Drop();
  bool go = true;
  if (*ctx->cb) {
    try {
      go = (*ctx->cb)(p);
    } catch (...) {
      go = false;
    }
  }
  if (!go) ctx->cancelled = true;
  return go;
}

void fill_info(const llama_model* m, const llama_vocab* v, bool vocab_only, ModelInfo* info) {
  info->arch = meta_str(m, "general.architecture");
  info->name = meta_str(m, "general.name");
  info->n_vocab = llama_vocab_n_tokens(v);
  info->vocab_type = engine::vocab_type_name(llama_vocab_type(v));
  info->has_chat_template = llama_model_chat_template(m, nullptr) != nullptr;
  if (vocab_only) return;  // no layers: llama.cpp's per-layer getters abort on such a model
  char desc[256];
  llama_model_desc(m, desc, sizeof(desc));
  info->description = desc;
  const std::string ft = meta_str(m, "general.file_type");
  info->quant = ft.empty() ? "unknown" : engine::ftype_name(std::atoi(ft.c_str()));
  info->n_params = llama_model_n_params(m);
  info->weights_bytes = llama_model_size(m);
  info->n_layer = llama_model_n_layer(m);
  info->n_embd = llama_model_n_embd(m);
  info->n_head = llama_model_n_head(m);
  info->n_head_kv = llama_model_n_head_kv(m);
  info->n_ctx_train = llama_model_n_ctx_train(m);
}

}  // namespace

const char* load_mode_name(LoadMode mode) {
  switch (mode) {
    case LoadMode::kAuto: return "auto";
    case LoadMode::kMmap: return "mmap";
    case LoadMode::kRead: return "read";
  }
  return "unknown";
}

Model::Impl::~Impl() {
  alive.reset();
  media.reset();  // the projector's context refers to the text model
  if (model) llama_model_free(model);
}

Result<const engine::ChatTemplates*> Model::Impl::chat_templates() const {
  std::call_once(templates_once_, [this] {
    Result<engine::ChatTemplatesPtr> t = engine::load_chat_templates(model);
    if (t.ok()) {
      templates_ = std::move(t).value();
    } else {
      templates_status_ = t.status();
    }
  });
  if (!templates_) return templates_status_;
  return static_cast<const engine::ChatTemplates*>(templates_.get());
}

const Model::Impl::VocabIndex& Model::Impl::vocab_index() const {
  std::call_once(vocab_index_once_, [this] {
    VocabIndex& x = vocab_index_;
    x.one_byte.fill(-1);
    const int32_t n = llama_vocab_n_tokens(vocab);
    std::vector<int16_t> first(static_cast<size_t>(n), 256);
    char buf[256];
    for (int32_t t = 0; t < n; ++t) {
      if (llama_vocab_is_eog(vocab, t)) continue;
      // special=true: the text the grammar matches a token by.
      const int32_t len = llama_token_to_piece(vocab, t, buf, sizeof(buf), 0, /*special=*/true);
      if (len == 0 || (len > 0 && buf[0] == '\0')) continue;
      const uint8_t b = static_cast<uint8_t>(len > 0 ? buf[0] : 0);
      if (len < 0) {  // longer than buf: its first byte still decides
        std::string big(static_cast<size_t>(-len), '\0');
        llama_token_to_piece(vocab, t, big.data(), -len, 0, true);
        first[t] = static_cast<uint8_t>(big[0]);
        continue;
      }
      first[t] = b;
      if (len == 1 && x.one_byte[b] < 0) x.one_byte[b] = t;
    }
    for (int32_t t = 0; t < n; ++t) {
      const int16_t b = first[t];
      x.by_byte[b < 256 && x.one_byte[b] >= 0 ? b : 256].push_back(t);
    }
  });
  return vocab_index_;
}

Result<std::string> Model::Impl::identity() const {
  std::call_once(identity_once_, [this] {
    const GgufCheckResult check = check_gguf_file(info.path);
    if (!check.ok()) {
      identity_status_ = check.status;
      return;
    }
    Result<std::string> h = store::sha256_file(info.path, 0, check.summary.data_offset);
    if (h.ok()) {
      identity_ = *h;
    } else {
      identity_status_ = h.status();
    }
  });
  if (identity_.empty()) return identity_status_;
  return identity_;
}

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::~Model() = default;

const ModelInfo& Model::info() const { return impl_->info; }

namespace {

// The projector of LoadOptions::mmproj_path, checked (precheck_gguf, check_projector) before
// llama.cpp's mtmd loads it over the text model.
Status load_projector_into(Model::Impl& impl, const LoadOptions& options) {
  const std::string& mm = options.mmproj_path;
  if (impl.info.metadata_only) {
    return Status::InvalidArgument("a projector needs the model's weights: not with a "
                                   "metadata-only or vocabulary-only load");
  }
  if (options.image_max_tokens == 0 || options.image_max_tokens < -1) {
    return Status::InvalidArgument("image_max_tokens is " + std::to_string(options.image_max_tokens) +
                                   ": use -1 (the projector's own limit) or a positive count");
  }
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t bytes = 0;
  EDGELLM_RETURN_IF_ERROR(precheck_gguf(mm, &bytes));
  EDGELLM_RETURN_IF_ERROR(check_projector(mm, impl.info.n_embd));
  auto ps = std::make_unique<engine::ProjectorState>();
  const int32_t threads = options.mmproj_threads > 0 ? options.mmproj_threads : physical_cores();
  Result<engine::ProjectorPtr> p =
      engine::load_projector(mm, impl.model, threads, options.image_max_tokens, &ps->info);
  if (!p.ok()) return p.status();
  ps->projector = std::move(p).value();
  // Which projector at which image size: part of the identity of state computed with it.
  const GgufCheckResult check = check_gguf_file(mm);
  if (!check.ok()) return check.status;
  Result<std::string> h = store::sha256_file(mm, 0, check.summary.data_offset);
  if (!h.ok()) return h.status();
  ps->identity = *h + ":" + std::to_string(bytes) + ":" + std::to_string(options.image_max_tokens);
  impl.info.mmproj_path = mm;
  impl.info.mmproj_bytes = bytes;
  impl.info.vision = ps->info.vision;
  impl.info.audio = ps->info.audio;
  impl.info.mmproj_load_ms = ms_since(t0);
  impl.media = std::move(ps);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Model>> Model::Load(const std::string& path, const LoadOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t file_bytes = 0;
  EDGELLM_RETURN_IF_ERROR(precheck_gguf(path, &file_bytes));
  engine::ensure_backend();
  engine::set_llama_verbose(options.verbose);
  engine::take_llama_errors();

  LoadMode mode = options.mode;
  if (mode == LoadMode::kAuto) {
    mode = file_bytes < options.mmap_threshold_bytes ? LoadMode::kMmap : LoadMode::kRead;
  }
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  mp.load_mode = mode == LoadMode::kMmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  mp.vocab_only = options.vocab_only;
  if (options.metadata_only || options.vocab_only) {
    // llama.cpp's no_alloc pass asserts (aborts) when combined with mmap.
    mp.no_alloc = true;
    mp.load_mode = LLAMA_LOAD_MODE_NONE;
  }
  ProgressCtx pctx{&options.on_progress};
  std::unique_ptr<MappedPageDropper> dropper;
  struct stat st {};
  if (mp.load_mode == LLAMA_LOAD_MODE_MMAP && ::stat(path.c_str(), &st) == 0) {
    dropper = std::make_unique<MappedPageDropper>(st.st_dev, st.st_ino);
    pctx.dropper = dropper.get();
  }
  if (options.on_progress || pctx.dropper) {
    mp.progress_callback = progress_trampoline;
    mp.progress_callback_user_data = &pctx;
  }

  auto impl = std::make_unique<Impl>();
  try {
    impl->model = llama_model_load_from_file(path.c_str(), mp);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("llama.cpp threw while loading ") + path + ": " + e.what());
  }
  if (pctx.cancelled) {
    return Status::Cancelled("model load of " + path + " cancelled by the progress callback");
  }
  if (!impl->model) {
    const std::string why = engine::take_llama_errors();
    return Status::CorruptData("llama.cpp could not load " + path +
                               (why.empty() ? std::string() : ": " + why) +
                               ": check that the file is a complete GGUF model of a supported "
                               "architecture");
  }
  impl->vocab = llama_model_get_vocab(impl->model);
  impl->info.path = path;
  impl->info.file_bytes = file_bytes;
  impl->info.load_mode = mode;
  impl->info.metadata_only = options.metadata_only || options.vocab_only;
  fill_info(impl->model, impl->vocab, options.vocab_only, &impl->info);
  if (!options.mmproj_path.empty()) {
    EDGELLM_RETURN_IF_ERROR(load_projector_into(*impl, options));
  }
  impl->info.load_ms = ms_since(t0);
  if (detail::log_wanted(LogLevel::kInfo)) {
    char line[256];
    std::snprintf(line, sizeof line, "loaded %s (%s, %s) in %.0f ms", path.c_str(),
                  impl->info.arch.c_str(), impl->info.quant.c_str(), impl->info.load_ms);
    Log(LogLevel::kInfo, line);
  }
  return std::unique_ptr<Model>(new Model(std::move(impl)));
}

Result<std::vector<int32_t>> Model::Tokenize(std::string_view text, bool add_special) const {
  return tokenize(impl_->vocab, text, add_special, /*parse_special=*/false);
}

std::string Model::TokenBytes(int32_t token) const { return token_bytes(impl_->vocab, token); }

Result<std::vector<int32_t>> tokenize(const llama_vocab* vocab, std::string_view text,
                                      bool add_special, bool parse_special) {
  if (text.size() > static_cast<size_t>(INT32_MAX) / 2) {
    return Status::InvalidArgument("text too long to tokenize (" + std::to_string(text.size()) +
                                   " bytes)");
  }
  std::vector<llama_token> tokens(text.size() + 8);
  int32_t n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                             static_cast<int32_t>(tokens.size()), add_special, parse_special);
  if (n < 0) {
    tokens.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab, text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                       static_cast<int32_t>(tokens.size()), add_special, parse_special);
  }
  if (n < 0) return Status::Internal("tokenization failed");
  tokens.resize(static_cast<size_t>(n));
  return std::vector<int32_t>(tokens.begin(), tokens.end());
}

std::string token_bytes(const llama_vocab* vocab, int32_t token, bool special) {
  char buf[128];
  int32_t n = llama_token_to_piece(vocab, token, buf, sizeof(buf), 0, special);
  if (n >= 0) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(-n), '\0');
  n = llama_token_to_piece(vocab, token, big.data(), static_cast<int32_t>(big.size()), 0, special);
  return n < 0 ? std::string() : big.substr(0, static_cast<size_t>(n));
}

}  // namespace edgellm
