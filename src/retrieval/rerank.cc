// Embedder::Rerank: query/document pairs through a reranker's classification head, packed
// into shared decodes like Embed.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "core/sys.h"
#include "engine/model_impl.h"
#include "retrieval/embedder_impl.h"

namespace edgellm {
namespace {

void replace_all(std::string* s, const std::string& from, const std::string& to) {
  for (size_t at = s->find(from); at != std::string::npos; at = s->find(from, at + to.size())) {
    s->replace(at, from.size(), to);
  }
}

// The pair's tokens: the model's rerank template with {query} and {document} filled in,
// tokenized as one text (as llama-server does); else BOS query EOS SEP document EOS SEP, each
// special token where the vocabulary adds one (as llama-embedding joins a pair): [CLS] query
// [SEP] document [SEP] for WordPiece, <s> query </s> document </s> for XLM-R's vocabulary.
// (llama-server's pair form drops the final [SEP] of a WordPiece vocabulary.) With truncate,
// the document's end is cut to fit max_tokens.
Result<std::vector<int32_t>> pair_tokens(const llama_model* lm, const llama_vocab* vocab,
                                         const std::vector<int32_t>& query,
                                         const std::string& query_text,
                                         const std::string& doc, int32_t max_tokens,
                                         bool truncate, bool* truncated) {
  *truncated = false;
  if (const char* tmpl = engine::rerank_template(lm)) {
    std::string prompt = tmpl;
    replace_all(&prompt, "{query}", query_text);
    replace_all(&prompt, "{document}", doc);
    auto t = tokenize(vocab, prompt, /*add_special=*/false, /*parse_special=*/true);
    if (t.ok() && static_cast<int32_t>(t->size()) > max_tokens && truncate) {
      t->resize(static_cast<size_t>(max_tokens));
      *truncated = true;
    }
    return t;
  }
  auto d = tokenize(vocab, doc, /*add_special=*/false, /*parse_special=*/false);
  if (!d.ok()) return d.status();
  const llama_token eos = llama_vocab_eos(vocab);
  const bool bos = llama_vocab_get_add_bos(vocab);
  const bool add_eos = llama_vocab_get_add_eos(vocab) && eos != LLAMA_TOKEN_NULL;
  const bool sep = llama_vocab_get_add_sep(vocab);
  const int32_t fixed = static_cast<int32_t>(query.size()) + bos + 2 * (add_eos + sep);
  if (truncate && fixed + static_cast<int32_t>(d->size()) > max_tokens && fixed < max_tokens) {
    d->resize(static_cast<size_t>(max_tokens - fixed));
    *truncated = true;
  }
  std::vector<int32_t> t;
  t.reserve(static_cast<size_t>(fixed) + d->size());
  auto close = [&] {
    if (add_eos) t.push_back(eos);
    if (sep) t.push_back(llama_vocab_sep(vocab));
  };
  if (bos) t.push_back(llama_vocab_bos(vocab));
  t.insert(t.end(), query.begin(), query.end());
  close();
  t.insert(t.end(), d->begin(), d->end());
  close();
  return t;
}

}  // namespace

Result<RerankResult> Embedder::Rerank(const std::string& query,
                                      const std::vector<std::string>& documents,
                                      const RerankOptions& options) {
  Impl& m = *impl_;
  if (!m.info.can_rerank) {
    return Status::InvalidArgument(m.info.model_path + " is not a reranker (pooling " +
                                   pooling_name(m.info.pooling) +
                                   "): load a rerank model (bge-reranker, jina-reranker...)");
  }
  EDGELLM_RETURN_IF_ERROR(check_text(query, "the query"));
  if (documents.empty()) return Status::InvalidArgument("no documents to rerank");
  std::lock_guard<std::mutex> lock(m.mu);
  const auto t0 = std::chrono::steady_clock::now();
  auto q = tokenize(m.vocab, query, /*add_special=*/false, /*parse_special=*/false);
  if (!q.ok()) return q.status();
  RerankResult out;
  std::vector<Impl::Item> items(documents.size());
  for (size_t i = 0; i < documents.size(); ++i) {
    const std::string what = "document " + std::to_string(i);
    EDGELLM_RETURN_IF_ERROR(check_text(documents[i], what));
    auto t = pair_tokens(m.lm, m.vocab, *q, query, documents[i], m.info.max_tokens,
                         options.truncate, &items[i].truncated);
    if (!t.ok()) return t.status();
    if (static_cast<int32_t>(t->size()) > m.info.max_tokens) {
      return Status::InvalidArgument(
          "the query with " + what + " is " + std::to_string(t->size()) +
          " tokens, more than the " + std::to_string(m.info.max_tokens) +
          " this model takes: shorten them" +
          (options.truncate ? " (the query alone leaves no room)" : ", or ask for truncation"));
    }
    out.stats.n_truncated += items[i].truncated;
    out.stats.n_tokens += static_cast<int64_t>(t->size());
    out.n_tokens.push_back(static_cast<int32_t>(t->size()));
    items[i].tokens = std::move(*t);
  }
  out.stats.tokenize_ms = ms_since(t0);
  out.stats.n_texts = static_cast<int32_t>(documents.size());
  out.scores.assign(documents.size(), 0.0f);
  auto take = [&](size_t i, const float* v) { out.scores[i] = v[0]; };
  EDGELLM_RETURN_IF_ERROR(m.Run(items, options.on_progress, take, &out.stats));
  out.probabilities.reserve(out.scores.size());
  for (float s : out.scores) out.probabilities.push_back(1.0f / (1.0f + std::exp(-s)));
  out.order.resize(documents.size());
  std::iota(out.order.begin(), out.order.end(), 0);
  auto key = [&](int32_t i) {
    return std::isnan(out.scores[i]) ? -INFINITY : out.scores[i];  // NaN last, order strict
  };
  std::stable_sort(out.order.begin(), out.order.end(),
                   [&](int32_t a, int32_t b) { return key(a) > key(b); });
  out.stats.total_ms = ms_since(t0);
  return out;
}

}  // namespace edgellm
