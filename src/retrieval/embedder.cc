// Embedder: load checks, options, packing texts into shared decodes, pooled vectors.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "core/sys.h"
#include "core/utf8.h"
#include "edgellm/platform.h"
#include "engine/model_impl.h"
#include "retrieval/embedder_impl.h"

namespace edgellm {
namespace {

constexpr int32_t kMaxTokensCap = 8192;  // a file without its training context
constexpr int32_t kDefaultBatchTokens = 512;
constexpr int32_t kDefaultBatchTexts = 64;

// llama.cpp's pooling enum values (include/llama.h).
constexpr int kPoolMean = 1, kPoolCls = 2, kPoolLast = 3, kPoolRank = 4;

Pooling pooling_of(int p) {
  switch (p) {
    case kPoolMean: return Pooling::kMean;
    case kPoolCls: return Pooling::kCls;
    case kPoolLast: return Pooling::kLast;
    case kPoolRank: return Pooling::kRank;
    default: return Pooling::kModel;
  }
}

int llama_pooling_of(Pooling p) {
  switch (p) {
    case Pooling::kMean: return kPoolMean;
    case Pooling::kCls: return kPoolCls;
    case Pooling::kLast: return kPoolLast;
    case Pooling::kRank: return kPoolRank;
    case Pooling::kModel: break;
  }
  return -1;
}

std::string meta(const llama_model* m, const char* key) {
  char buf[1024] = {0};
  return llama_model_meta_val_str(m, key, buf, sizeof(buf)) < 0 ? std::string() : buf;
}

Status resolve(const ModelInfo& mi, EmbedderOptions* o, int file_pooling) {
  if (o->n_threads == -1) o->n_threads = physical_cores();
  if (o->n_threads < 1) {
    return Status::InvalidArgument("n_threads is " + std::to_string(o->n_threads) +
                                   ": use a positive thread count or -1 for auto");
  }
  o->n_threads = std::min(o->n_threads, physical_cores());
  const int32_t trained = mi.n_ctx_train > 0 ? mi.n_ctx_train : kMaxTokensCap;
  if (o->max_tokens == -1) o->max_tokens = std::min(trained, kDefaultMaxEmbedTokens);
  if (o->max_tokens < 4 || o->max_tokens > trained) {
    return Status::InvalidArgument("max_tokens is " + std::to_string(o->max_tokens) + ": use 4.." +
                                   std::to_string(trained) + " (the model was trained on " +
                                   std::to_string(trained) + " tokens) or -1 for that");
  }
  if (o->batch_tokens == -1) o->batch_tokens = std::max(kDefaultBatchTokens, o->max_tokens);
  if (o->batch_tokens < o->max_tokens || o->batch_tokens > 65536) {
    return Status::InvalidArgument("batch_tokens is " + std::to_string(o->batch_tokens) +
                                   ": use max_tokens (" + std::to_string(o->max_tokens) +
                                   ")..65536, or -1 for " +
                                   std::to_string(std::max(kDefaultBatchTokens, o->max_tokens)));
  }
  const int32_t seq_cap = engine::max_sequences();
  if (o->batch_texts == -1) o->batch_texts = std::min(kDefaultBatchTexts, seq_cap);
  if (o->batch_texts < 1 || o->batch_texts > seq_cap) {
    return Status::InvalidArgument("batch_texts is " + std::to_string(o->batch_texts) +
                                   ": use 1.." + std::to_string(seq_cap) + " or -1 for " +
                                   std::to_string(std::min(kDefaultBatchTexts, seq_cap)));
  }
  if (o->pooling == Pooling::kModel) {
    if (file_pooling < kPoolMean || file_pooling > kPoolRank) {
      return Status::InvalidArgument(
          mi.path + " names no pooling (" + mi.arch + ".pooling_type): it is not an embedding "
          "model (a chat model?). Use an embedding model (BERT, bge, MiniLM, Qwen3-Embedding...) "
          "or pass a pooling (mean, cls, last) to embed with this one anyway");
    }
    o->pooling = pooling_of(file_pooling);
  } else if (o->pooling == Pooling::kRank && file_pooling != kPoolRank) {
    return Status::InvalidArgument(mi.path + " is not a reranker (its file names pooling " +
                                   std::to_string(file_pooling) +
                                   "): rank pooling needs a model with a classification head");
  }
  return Status::Ok();
}

double ms(std::chrono::steady_clock::time_point t0) { return ms_since(t0); }

}  // namespace

const char* pooling_name(Pooling pooling) {
  switch (pooling) {
    case Pooling::kModel: return "model";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
    case Pooling::kRank: return "rank";
  }
  return "unknown";
}

Result<Pooling> pooling_from_name(const std::string& name) {
  for (Pooling p : {Pooling::kModel, Pooling::kMean, Pooling::kCls, Pooling::kLast,
                    Pooling::kRank}) {
    if (name == pooling_name(p)) return p;
  }
  return Status::InvalidArgument("unknown pooling '" + name +
                                 "': use model, mean, cls, last or rank");
}

Status check_text(const std::string& text, const std::string& what) {
  if (text.empty()) return Status::InvalidArgument(what + " is empty: there is nothing to embed");
  if (text.find('\0') != std::string::npos) {
    return Status::InvalidArgument(what + " contains a NUL byte at offset " +
                                   std::to_string(text.find('\0')) + ": send text, not binary");
  }
  if (!is_valid_utf8(text)) {
    return Status::InvalidArgument(what + " is not valid UTF-8: decode it to UTF-8 first");
  }
  return Status::Ok();
}

void truncate_tokens(const llama_vocab* vocab, int32_t max_tokens, std::vector<int32_t>* t) {
  if (static_cast<int32_t>(t->size()) <= max_tokens) return;
  const int32_t last = t->back();
  const bool closing = (llama_vocab_get_add_eos(vocab) && last == llama_vocab_eos(vocab)) ||
                       (llama_vocab_get_add_sep(vocab) && last == llama_vocab_sep(vocab));
  t->resize(static_cast<size_t>(max_tokens));
  if (closing) t->back() = last;
}

Result<std::unique_ptr<Embedder>> Embedder::Create(const Model& model,
                                                   const EmbedderOptions& options) {
  const ModelInfo& mi = model.info();
  if (mi.metadata_only) {
    return Status::InvalidArgument(mi.path + " was loaded metadata-only: load its weights to embed");
  }
  auto impl = std::make_unique<Impl>();
  impl->model = &model;
  impl->lm = model.impl()->model;
  impl->vocab = model.impl()->vocab;
  if (engine::is_encoder_decoder(impl->lm)) {
    return Status::InvalidArgument(mi.path + " is an encoder-decoder model (" + mi.arch +
                                   "): llama.cpp computes no embeddings for those");
  }
  EmbedderOptions o = options;
  EDGELLM_RETURN_IF_ERROR(resolve(mi, &o, engine::model_pooling(impl->lm)));

  EmbedderInfo& info = impl->info;
  info.model_path = mi.path;
  info.model_name = mi.name.empty() ? std::filesystem::path(mi.path).filename().string() : mi.name;
  info.arch = mi.arch;
  auto identity = model.impl()->identity();
  if (!identity.ok()) return identity.status();
  info.identity = *identity;
  info.pooling = o.pooling;
  info.can_rerank = o.pooling == Pooling::kRank;
  info.can_embed = !info.can_rerank;
  info.dims = info.can_embed ? engine::model_embd_out(impl->lm) : 0;
  info.max_tokens = o.max_tokens;
  info.batch_tokens = o.batch_tokens;
  info.batch_texts = o.batch_texts;
  info.has_rerank_template = engine::rerank_template(impl->lm) != nullptr;
  info.query_prefix = !o.query_prefix.empty() ? o.query_prefix
                                              : meta(impl->lm, "edgellm.embedding.query_prefix");
  info.document_prefix = !o.document_prefix.empty()
                             ? o.document_prefix
                             : meta(impl->lm, "edgellm.embedding.document_prefix");
  impl->n_threads = o.n_threads;

  engine::take_llama_errors();
  llama_context_params cp = engine::embed_context_params(o.batch_tokens, o.batch_texts,
                                                         o.n_threads, llama_pooling_of(o.pooling));
  llama_context* ctx = nullptr;
  try {
    ctx = llama_init_from_model(impl->lm, cp);
  } catch (const std::exception&) {
    ctx = nullptr;
  }
  if (!ctx) {
    const std::string why = engine::take_llama_errors();
    return Status::ResourceExhausted("could not create an embedding context (batch_tokens " +
                                     std::to_string(o.batch_tokens) + ", batch_texts " +
                                     std::to_string(o.batch_texts) + ")" +
                                     (why.empty() ? "" : ": " + why) +
                                     ": use a smaller batch_tokens");
  }
  impl->ctx.reset(ctx);
  return std::unique_ptr<Embedder>(new Embedder(std::move(impl)));
}

Result<std::unique_ptr<Embedder>> Embedder::Load(const std::string& path,
                                                 const EmbedderOptions& options) {
  auto model = Model::Load(path, options.load);
  if (!model.ok()) return model.status();
  auto e = Create(**model, options);
  if (!e.ok()) return e.status();
  (*e)->impl_->owned = std::move(*model);
  return e;
}

Embedder::Embedder(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Embedder::~Embedder() = default;

const EmbedderInfo& Embedder::info() const { return impl_->info; }

Result<std::vector<int32_t>> Embedder::Tokenize(std::string_view text, bool add_special) const {
  return tokenize(impl_->vocab, text, add_special, /*parse_special=*/false);
}

Status Embedder::Impl::Run(const std::vector<Item>& items,
                           const std::function<bool(int32_t, int32_t)>& on_progress,
                           const std::function<void(size_t, const float*)>& take,
                           EmbedStats* stats) {
  llama_batch batch = llama_batch_init(info.batch_tokens, 0, 1);
  struct BatchFree {
    llama_batch* b;
    ~BatchFree() { llama_batch_free(*b); }
  } batch_free{&batch};
  const int32_t total = static_cast<int32_t>(items.size());
  size_t next = 0;
  while (next < items.size()) {
    // Pack texts in input order until the tokens or the sequences run out.
    batch.n_tokens = 0;
    const size_t first = next;
    while (next < items.size() &&
           static_cast<int32_t>(next - first) < info.batch_texts &&
           batch.n_tokens + static_cast<int32_t>(items[next].tokens.size()) <= info.batch_tokens) {
      const auto seq = static_cast<llama_seq_id>(next - first);
      const std::vector<int32_t>& t = items[next].tokens;
      for (size_t i = 0; i < t.size(); ++i) {
        const int32_t k = batch.n_tokens++;
        batch.token[k] = t[i];
        batch.pos[k] = static_cast<llama_pos>(i);
        batch.n_seq_id[k] = 1;
        batch.seq_id[k][0] = seq;
        batch.logits[k] = 1;
      }
      ++next;
    }
    engine::kv_clear(ctx.get());
    engine::take_llama_errors();
    const auto td = std::chrono::steady_clock::now();
    const int32_t rc = llama_decode(ctx.get(), batch);
    stats->decode_ms += ms(td);
    ++stats->n_decodes;
    if (rc != 0) {
      const std::string why = engine::take_llama_errors();
      return Status::Internal("decoding texts " + std::to_string(first) + ".." +
                              std::to_string(next - 1) + " failed (llama_decode " +
                              std::to_string(rc) + ")" + (why.empty() ? "" : ": " + why));
    }
    for (size_t i = first; i < next; ++i) {
      const float* out = engine::sequence_output(ctx.get(), static_cast<int32_t>(i - first));
      if (!out) return Status::Internal("llama.cpp returned no pooled output for text " +
                                        std::to_string(i));
      take(i, out);
    }
    if (on_progress && !on_progress(static_cast<int32_t>(next), total)) {
      return Status::Cancelled("cancelled after " + std::to_string(next) + " of " +
                               std::to_string(total) + " texts");
    }
  }
  return Status::Ok();
}

Result<Embeddings> Embedder::Embed(const std::vector<std::string>& texts,
                                   const EmbedOptions& options) {
  Impl& m = *impl_;
  if (!m.info.can_embed) {
    return Status::InvalidArgument(m.info.model_path +
                                   " is a reranker (rank pooling): use Rerank, or an embedding model");
  }
  if (texts.empty()) return Status::InvalidArgument("no texts to embed");
  std::lock_guard<std::mutex> lock(m.mu);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string& prefix = options.kind == TextKind::kQuery      ? m.info.query_prefix
                              : options.kind == TextKind::kDocument ? m.info.document_prefix
                                                                    : std::string();
  Embeddings out;
  out.dims = m.info.dims;
  std::vector<Impl::Item> items(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string what = texts.size() == 1 ? "the text" : "text " + std::to_string(i);
    EDGELLM_RETURN_IF_ERROR(check_text(texts[i], what));
    auto tokens = tokenize(m.vocab, prefix + texts[i], /*add_special=*/true,
                           /*parse_special=*/false);
    if (!tokens.ok()) return tokens.status();
    if (static_cast<int32_t>(tokens->size()) > m.info.max_tokens) {
      if (!options.truncate) {
        return Status::InvalidArgument(
            what + " has " + std::to_string(tokens->size()) + " tokens, more than the " +
            std::to_string(m.info.max_tokens) + " this model takes: split it (an index chunks "
            "documents), or ask for truncation");
      }
      truncate_tokens(m.vocab, m.info.max_tokens, &*tokens);
      items[i].truncated = true;
      ++out.stats.n_truncated;
    }
    items[i].tokens = std::move(*tokens);
    out.stats.n_tokens += static_cast<int64_t>(items[i].tokens.size());
  }
  out.stats.tokenize_ms = ms(t0);
  return m.EmbedItems(items, options, std::move(out), t0);
}

Result<Embeddings> Embedder::EmbedTokens(const std::vector<std::vector<int32_t>>& inputs,
                                         const EmbedOptions& options) {
  Impl& m = *impl_;
  if (!m.info.can_embed) {
    return Status::InvalidArgument(m.info.model_path +
                                   " is a reranker (rank pooling): use Rerank, or an embedding model");
  }
  if (inputs.empty()) return Status::InvalidArgument("no inputs to embed");
  std::lock_guard<std::mutex> lock(m.mu);
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t n_vocab = llama_vocab_n_tokens(m.vocab);
  Embeddings out;
  out.dims = m.info.dims;
  std::vector<Impl::Item> items(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string what = "input " + std::to_string(i);
    if (inputs[i].empty()) return Status::InvalidArgument(what + " has no tokens");
    for (int32_t t : inputs[i]) {
      if (t < 0 || t >= n_vocab) {
        return Status::InvalidArgument(what + " has token " + std::to_string(t) +
                                       ", outside this model's vocabulary of " +
                                       std::to_string(n_vocab));
      }
    }
    items[i].tokens = inputs[i];
    if (static_cast<int32_t>(items[i].tokens.size()) > m.info.max_tokens) {
      if (!options.truncate) {
        return Status::InvalidArgument(what + " has " + std::to_string(inputs[i].size()) +
                                       " tokens, more than the " +
                                       std::to_string(m.info.max_tokens) +
                                       " this model takes: split it, or ask for truncation");
      }
      items[i].tokens.resize(static_cast<size_t>(m.info.max_tokens));
      items[i].truncated = true;
      ++out.stats.n_truncated;
    }
    out.stats.n_tokens += static_cast<int64_t>(items[i].tokens.size());
  }
  return m.EmbedItems(items, options, std::move(out), t0);
}

Result<Embeddings> Embedder::Impl::EmbedItems(const std::vector<Item>& items,
                                              const EmbedOptions& options, Embeddings out,
                                              std::chrono::steady_clock::time_point t0) {
  out.stats.n_texts = static_cast<int32_t>(items.size());
  const size_t dims = static_cast<size_t>(out.dims);
  out.data.assign(items.size() * dims, 0.0f);
  auto take = [&](size_t i, const float* v) {
    float* dst = out.data.data() + i * dims;
    std::memcpy(dst, v, dims * sizeof(float));
    if (!options.normalize) return;
    double sum = 0;
    for (size_t k = 0; k < dims; ++k) sum += static_cast<double>(dst[k]) * dst[k];
    if (sum <= 0) return;
    const float inv = static_cast<float>(1.0 / std::sqrt(sum));
    for (size_t k = 0; k < dims; ++k) dst[k] *= inv;
  };
  EDGELLM_RETURN_IF_ERROR(Run(items, options.on_progress, take, &out.stats));
  out.stats.total_ms = ms(t0);
  for (const Item& it : items) {
    out.n_tokens.push_back(static_cast<int32_t>(it.tokens.size()));
    out.truncated.push_back(it.truncated ? 1 : 0);
  }
  return out;
}

float cosine_similarity(std::span<const float> a, std::span<const float> b) {
  const size_t n = std::min(a.size(), b.size());
  float dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  if (na <= 0 || nb <= 0) return 0;
  return dot / (std::sqrt(na) * std::sqrt(nb));
}

}  // namespace edgellm
