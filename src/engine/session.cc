#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include "core/sys.h"
#include "edgellm/platform.h"
#include "engine/draft_model.h"
#include "engine/llama_glue.h"
#include "engine/llama_glue_mtmd.h"
#include "engine/session_impl.h"

namespace edgellm {
namespace {

bool abort_trampoline(void* data) {
  return static_cast<std::atomic<bool>*>(data)->load(std::memory_order_relaxed);
}

Status resolve_options(const ModelInfo& info, SessionOptions* o) {
  if (o->n_ctx == -1) o->n_ctx = std::min(info.n_ctx_train > 0 ? info.n_ctx_train : 2048, 2048);
  if (o->n_ctx < 1) {
    return Status::InvalidArgument("n_ctx is " + std::to_string(o->n_ctx) +
                                   ": use a positive context length (e.g. 1024) or -1 for auto");
  }
  if (info.n_ctx_train > 0 && o->n_ctx > info.n_ctx_train) {
    return Status::InvalidArgument("n_ctx " + std::to_string(o->n_ctx) + " exceeds the " +
                                   std::to_string(info.n_ctx_train) +
                                   " tokens the model was trained for: use a smaller --ctx");
  }
  if (o->n_ctx < 16) {
    return Status::InvalidArgument("n_ctx " + std::to_string(o->n_ctx) +
                                   " is too small to hold a prompt and an answer: use >= 16");
  }
  const int32_t cores = physical_cores();
  if (o->n_threads == -1) o->n_threads = cores;
  if (o->n_threads < 1) {
    return Status::InvalidArgument("n_threads is " + std::to_string(o->n_threads) +
                                   ": use a positive thread count or -1 for auto (" +
                                   std::to_string(cores) + " physical cores here)");
  }
  if (o->n_threads > cores) o->n_threads = cores;  // more threads than cores only slows decode
  if (o->n_batch < 1) {
    return Status::InvalidArgument("n_batch is " + std::to_string(o->n_batch) +
                                   ": use a positive batch size (default 512)");
  }
  if (o->n_batch > o->n_ctx) o->n_batch = o->n_ctx;
  return Status::Ok();
}

}  // namespace

const char* media_marker() { return engine::media_marker_text(); }

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone: return "none";
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kContextFull: return "context_full";
    case FinishReason::kToolCalls: return "tool_calls";
  }
  return "unknown";
}

const char* json_state_name(JsonState state) {
  switch (state) {
    case JsonState::kNone: return "none";
    case JsonState::kComplete: return "complete";
    case JsonState::kIncomplete: return "incomplete";
    case JsonState::kInvalid: return "invalid";
  }
  return "unknown";
}

const char* json_whitespace_name(JsonWhitespace w) {
  switch (w) {
    case JsonWhitespace::kCompact: return "compact";
    case JsonWhitespace::kNone: return "none";
    case JsonWhitespace::kFree: return "free";
  }
  return "unknown";
}

bool parse_json_whitespace(std::string_view name, JsonWhitespace* out) {
  for (JsonWhitespace w : {JsonWhitespace::kCompact, JsonWhitespace::kNone, JsonWhitespace::kFree}) {
    if (name == json_whitespace_name(w)) {
      *out = w;
      return true;
    }
  }
  return false;
}

Session::Impl::~Impl() {
  if (ctx) llama_free(ctx);
}

Status Session::Impl::EnsureContext() {
  if (ctx) return Status::Ok();
  llama_context_params cp =
      engine::context_params(options.n_ctx, options.n_batch, options.n_threads, GGML_TYPE_F16);
  cp.abort_callback = abort_trampoline;
  cp.abort_callback_data = &cancel;
  engine::take_llama_errors();
  try {
    ctx = llama_init_from_model(model->model, cp);
  } catch (const std::exception& e) {
    ctx = nullptr;
  }
  if (!ctx) {
    const std::string why = engine::take_llama_errors();
    return Status::ResourceExhausted(
        "could not create an inference context (n_ctx " + std::to_string(options.n_ctx) +
        ", n_batch " + std::to_string(options.n_batch) + ")" + (why.empty() ? "" : ": " + why) +
        ": use a smaller --ctx or --batch");
  }
  cached.clear();
  kv_pos.Clear();
  ApplyLoras();
  return Status::Ok();
}

void Session::Impl::TakeCache(CacheOwner* next) {
  if (owner == next) return;
  CacheOwner* previous = owner;
  owner = next;
  if (previous) previous->Evicted(*this);
}

void Session::Impl::ClearKv() {
  if (ctx) engine::kv_clear(ctx);
  cached.clear();
  kv_pos.Clear();
}

void Session::Impl::ApplyLoras() {
  if (!ctx) return;
  ClearKv();
  std::vector<llama_adapter_lora*> ptrs;
  std::vector<float> scales;
  for (const auto& [adapter, scale] : loras) {
    ptrs.push_back(adapter->impl()->adapter);
    scales.push_back(scale);
  }
  engine::set_lora_adapters(ctx, ptrs, scales);
}

// A few tokens of prefill plus one decode step touch every weight page and size the
// compute buffers, so the first real request does not pay for it.
Status Session::Impl::Warmup() {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<llama_token> toks;
  const llama_token bos = llama_vocab_bos(model->vocab);
  const llama_token eos = llama_vocab_eos(model->vocab);
  toks.push_back(bos != LLAMA_TOKEN_NULL ? bos : (eos != LLAMA_TOKEN_NULL ? eos : 0));
  Result<std::vector<int32_t>> hello = tokenize(model->vocab, "Hello", false, false);
  if (hello.ok()) toks.insert(toks.end(), hello->begin(), hello->end());
  if (static_cast<int32_t>(toks.size()) > options.n_batch) toks.resize(1);
  int32_t rc = llama_decode(ctx, llama_batch_get_one(toks.data(), static_cast<int32_t>(toks.size())));
  llama_token next = toks.back();
  if (rc == 0) rc = llama_decode(ctx, llama_batch_get_one(&next, 1));
  // Where speculation may run: one token's decode and check-sized batches' (all logits, as a
  // check asks; 2 = one guess, the most common check, and 4 = a step of ggml's repacked
  // kernels), timed warm, seed the decode cost model its first guesses are sized by.
  constexpr int32_t kSizes[] = {1, 2, 4};
  const int32_t used = static_cast<int32_t>(toks.size()) + 1;  // cells so far
  if (rc == 0 && options.n_batch >= 4 && used + 7 <= options.n_ctx &&
      engine::kv_can_cut_tail(model->model)) {
    std::vector<llama_token> check(4, next);
    std::vector<int8_t> all(4, 1);
    for (int32_t n : kSizes) {
      llama_batch b = llama_batch_get_one(check.data(), n);
      if (n > 1) b.logits = all.data();
      const auto t1 = std::chrono::steady_clock::now();
      rc = llama_decode(ctx, b);
      llama_synchronize(ctx);
      if (rc != 0) break;
      decode_cost.Record(n, ms_since(t1), options.n_threads);
    }
  }
  ClearKv();
  llama_synchronize(ctx);
  warmup_ms = ms_since(t0);
  if (rc != 0) {
    return Status::Internal("warm-up decode failed (llama_decode returned " + std::to_string(rc) +
                            ")");
  }
  return Status::Ok();
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

Result<std::unique_ptr<Session>> Session::Create(const Model& model,
                                                 const SessionOptions& options) {
  if (model.info().metadata_only) {
    return Status::InvalidArgument("model " + model.info().path +
                                   " was loaded with metadata_only: load it again with weights");
  }
  auto impl = std::make_unique<Impl>();
  impl->model = model.impl();
  impl->options = options;
  EDGELLM_RETURN_IF_ERROR(resolve_options(model.info(), &impl->options));
  EDGELLM_RETURN_IF_ERROR(impl->EnsureContext());
  if (impl->options.warmup) EDGELLM_RETURN_IF_ERROR(impl->Warmup());
  if (const Model* d = impl->options.draft_model) {
    const SessionOptions& so = impl->options;
    if (d->info().metadata_only) {
      return Status::InvalidArgument("draft model " + d->info().path +
                                     " was loaded with metadata_only: load it with weights");
    }
    if (d->info().n_ctx_train > 0 && d->info().n_ctx_train < so.n_ctx) {
      return Status::InvalidArgument(
          "draft model " + d->info().path + " was trained for " +
          std::to_string(d->info().n_ctx_train) + " tokens, fewer than the context's " +
          std::to_string(so.n_ctx) + ": use --ctx " + std::to_string(d->info().n_ctx_train) +
          " or less, or another draft model");
    }
    EDGELLM_RETURN_IF_ERROR(engine::check_draft_vocab(*model.impl(), *d->impl()));
    auto dm = engine::DraftModel::Create(*d->impl(), so.n_ctx, so.n_batch, so.n_threads,
                                         model.info().weights_bytes, so.warmup, &impl->cancel);
    if (!dm.ok()) return dm.status();
    impl->draft = std::move(*dm);
  }
  return std::unique_ptr<Session>(new Session(std::move(impl)));
}

Result<Generation> Session::Generate(std::string_view prompt, const GenerateOptions& options,
                                     const TextSink& sink) {
  struct Busy {
    std::atomic<bool>& flag;
    ~Busy() { flag.store(false); }
  } busy{impl_->generating};
  impl_->generating.store(true);
  impl_->TakeCache(nullptr);
  try {
    return impl_->Generate(prompt, options, sink);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("generation failed: ") + e.what());
  }
}

Status Session::SetLora(std::shared_ptr<const LoraAdapter> adapter, float scale) {
  if (!adapter) return Status::InvalidArgument("SetLora: no adapter");
  if (adapter->impl()->model != impl_->model) {
    return Status::InvalidArgument("LoRA " + adapter->info().path +
                                   " was loaded for another model than this session's (" +
                                   impl_->model->info.path + "): load it for this model");
  }
  if (!std::isfinite(scale) || std::fabs(scale) > 100.0f) {
    return Status::InvalidArgument("LoRA scale must be a finite number in -100..100");
  }
  if (impl_->generating.load()) {
    return Status::FailedPrecondition("a generation is running: change adapters between generations");
  }
  auto& v = impl_->loras;
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first == adapter; });
  if (scale == 0.0f) {
    if (it != v.end()) v.erase(it);
  } else if (it != v.end()) {
    it->second = scale;
  } else {
    v.emplace_back(std::move(adapter), scale);
  }
  impl_->ApplyLoras();
  return Status::Ok();
}

Status Session::RemoveLora(const LoraAdapter& adapter) {
  if (impl_->generating.load()) {
    return Status::FailedPrecondition("a generation is running: change adapters between generations");
  }
  auto& v = impl_->loras;
  auto it = std::find_if(v.begin(), v.end(), [&](const auto& e) { return e.first.get() == &adapter; });
  if (it == v.end()) {
    return Status::NotFound("LoRA " + adapter.info().path + " is not applied to this session");
  }
  v.erase(it);
  impl_->ApplyLoras();
  return Status::Ok();
}

Status Session::ClearLora() {
  if (impl_->generating.load()) {
    return Status::FailedPrecondition("a generation is running: change adapters between generations");
  }
  impl_->loras.clear();
  impl_->ApplyLoras();
  return Status::Ok();
}

std::vector<std::pair<std::shared_ptr<const LoraAdapter>, float>> Session::loras() const {
  return impl_->loras;
}

void Session::Cancel() { impl_->cancel.store(true); }

void Session::ReleaseKv() {
  if (!impl_->ctx) return;
  llama_free(impl_->ctx);
  impl_->ctx = nullptr;
  impl_->cached.clear();
  impl_->kv_pos.Clear();
  if (impl_->draft) impl_->draft->Release();
  ReturnFreedMemory();  // freed heap pages back to the system now, not at some later free
}

bool Session::kv_allocated() const { return impl_->ctx != nullptr; }
int32_t Session::n_ctx() const { return impl_->options.n_ctx; }
int32_t Session::n_threads() const { return impl_->options.n_threads; }
int32_t Session::n_batch() const { return impl_->options.n_batch; }
double Session::warmup_ms() const { return impl_->warmup_ms; }

Result<std::string> Session::FormatChat(std::string_view user, std::string_view system) const {
  return format_chat(impl_->model, user, system);
}

Result<const engine::ChatTemplates*> model_chat_templates(const Model::Impl* model) {
  if (!model->info.has_chat_template) {
    return Status::InvalidArgument(
        "model has no chat template (tokenizer.chat_template): use plain-prompt mode");
  }
  return model->chat_templates();
}

std::vector<ChatMessage> chat_messages(std::string_view system,
                                       const std::vector<ChatMessage>& history, ChatMessage user) {
  std::vector<ChatMessage> msgs;
  msgs.reserve(history.size() + 2);
  if (!system.empty()) msgs.push_back({"system", std::string(system)});
  msgs.insert(msgs.end(), history.begin(), history.end());
  msgs.push_back(std::move(user));
  return msgs;
}

Result<std::string> format_chat(const Model::Impl* model, std::string_view user,
                                std::string_view system, const std::vector<ChatMessage>& history) {
  Result<const engine::ChatTemplates*> templates = model_chat_templates(model);
  if (!templates.ok()) return templates.status();
  return engine::apply_chat_template(
      **templates, chat_messages(system, history, {"user", std::string(user)}), true);
}

}  // namespace edgellm
