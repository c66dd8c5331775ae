// Embedder: texts to vectors (embedding models) and query/document relevance scores
// (rerankers), many texts per decode.
//
// Thread safety: an Embedder runs one call at a time (calls from several threads are
// serialized); the Model it was made from may be shared with Sessions and other Embedders.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/model.h"
#include "edgellm/status.h"

namespace edgellm {

// How the per-token outputs of a text become one vector (llama.cpp's pooling types).
enum class Pooling {
  kModel,  // what the model's GGUF says (<arch>.pooling_type); a file without one is refused
  kMean,   // the mean of every token's output (sentence-transformers' MiniLM)
  kCls,    // the first token's ([CLS]) output (bge)
  kLast,   // the last token's output (decoder embedders: Qwen3-Embedding)
  kRank,   // the classification head's score of a query/document pair (rerankers)
};
const char* pooling_name(Pooling pooling);  // "model", "mean", "cls", "last", "rank"
Result<Pooling> pooling_from_name(const std::string& name);

// EmbedderOptions::max_tokens' default cap, and the planner's (plan_memory with embedding).
inline constexpr int32_t kDefaultMaxEmbedTokens = 512;

struct EmbedderOptions {
  // How the model file is read when Embedder::Load opens it. Default: LoadOptions{}.
  LoadOptions load;
  // Default kModel. kMean/kCls/kLast on a model whose file says otherwise override it.
  Pooling pooling = Pooling::kModel;
  // Threads for decoding. Default -1: physical cores.
  int32_t n_threads = -1;
  // The most tokens one text may have, its prefix and special tokens included. Default -1:
  // the model's training context (512 for BERT models), at most kDefaultMaxEmbedTokens (512):
  // llama.cpp gives every token of an embedding decode an output row, n_vocab floats on a
  // decoder (297 MiB for 512 tokens of Qwen's 151,936-token vocabulary), so a decoder
  // embedder's longer texts (Qwen3-Embedding takes 32,768) are the caller's explicit choice.
  int32_t max_tokens = -1;
  // Tokens decoded together: several texts share one decode up to this many tokens (at least
  // max_tokens: an encoder sees a whole text in one pass). Default -1: max(512, max_tokens).
  // Larger is not faster: attention spans the whole decode (masked per text), and llama.cpp
  // keeps an output row of n_vocab floats per token (docs/retrieval.md).
  int32_t batch_tokens = -1;
  // Texts decoded together, at most. Default -1: 64 (capped by llama.cpp's sequence limit).
  int32_t batch_texts = -1;
  // Put before queries / documents (EmbedOptions::kind). Default "": the model's own, from
  // its GGUF (edgellm.embedding.query_prefix / document_prefix), else none.
  std::string query_prefix;
  std::string document_prefix;
};

// What an Embedder is, for a UI, an index's model check, or a server's /v1/models.
struct EmbedderInfo {
  std::string model_path;
  std::string model_name;  // general.name, or the file name
  std::string arch;        // "bert", "qwen3", ...
  // sha256 of the GGUF's header and tensor table: the same weights give the same identity
  // (an index records it and refuses vectors from another model).
  std::string identity;
  Pooling pooling = Pooling::kModel;  // the pooling in use (never kModel)
  int32_t dims = 0;                   // length of each vector (0 for rerankers)
  int32_t max_tokens = 0;             // per text
  int32_t batch_tokens = 0;
  int32_t batch_texts = 0;
  bool can_embed = false;   // pooling mean, cls or last
  bool can_rerank = false;  // pooling rank with a classification head
  bool has_rerank_template = false;  // the model's own query/document template
  std::string query_prefix, document_prefix;
};

// Which prefix a text gets.
enum class TextKind { kPlain, kQuery, kDocument };

struct EmbedOptions {
  // Default kPlain: no prefix. kQuery / kDocument add EmbedderInfo::query_prefix /
  // document_prefix.
  TextKind kind = TextKind::kPlain;
  // Scale each vector to length 1 (cosine similarity is then a dot product). Default true.
  bool normalize = true;
  // A text longer than max_tokens: false (default) fails the whole call with
  // kInvalidArgument naming the text and its length; true keeps its first max_tokens tokens
  // (its closing special token kept) and counts it in EmbedStats::n_truncated.
  bool truncate = false;
  // Called after each decode with texts done and the total; return false to cancel
  // (kCancelled, nothing returned).
  std::function<bool(int32_t done, int32_t total)> on_progress;
};

struct EmbedStats {
  int32_t n_texts = 0;
  int64_t n_tokens = 0;    // every text's tokens, prefixes and special tokens included
  int32_t n_truncated = 0;
  int32_t n_decodes = 0;   // batches decoded
  double tokenize_ms = 0;
  double decode_ms = 0;
  double total_ms = 0;
};

// One vector per input text, in input order, stored contiguously.
struct Embeddings {
  int32_t dims = 0;
  std::vector<float> data;          // size() texts x dims
  std::vector<int32_t> n_tokens;    // per text
  std::vector<uint8_t> truncated;   // per text: 1 when cut to max_tokens
  EmbedStats stats;
  size_t size() const { return n_tokens.size(); }
  std::span<const float> vector(size_t i) const {
    return {data.data() + i * static_cast<size_t>(dims), static_cast<size_t>(dims)};
  }
};

struct RerankOptions {
  // As EmbedOptions::truncate, for each query/document pair (the document's end is cut).
  bool truncate = false;
  std::function<bool(int32_t done, int32_t total)> on_progress;
};

struct RerankResult {
  // Per document, in input order: the model's raw score (a logit) and its sigmoid in (0, 1).
  std::vector<float> scores;
  std::vector<float> probabilities;
  // Document indices from the most to the least relevant (ties in input order).
  std::vector<int32_t> order;
  std::vector<int32_t> n_tokens;  // per pair
  EmbedStats stats;
};

class Embedder {
 public:
  // An Embedder over an already loaded `model` (which must outlive it). kInvalidArgument
  // when the model cannot embed or rank: a chat model without pooling in its file, say,
  // unless options.pooling names one.
  static Result<std::unique_ptr<Embedder>> Create(const Model& model,
                                                  const EmbedderOptions& options = {});
  // Loads `path` (checked like Model::Load) and makes an Embedder that owns it.
  static Result<std::unique_ptr<Embedder>> Load(const std::string& path,
                                                const EmbedderOptions& options = {});
  ~Embedder();
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  const EmbedderInfo& info() const;
  // The model's tokens for `text` (add_special: with [CLS]/[SEP] or BOS/EOS as Embed adds
  // them), for counting and chunking.
  Result<std::vector<int32_t>> Tokenize(std::string_view text, bool add_special) const;

  // One vector per text. Texts are packed into shared decodes (each in its own sequence);
  // a text's vector does not depend on which texts share its decode (up to float rounding:
  // cosine >= 0.9999 against the text alone, tests/embed_test.cc). Errors: no texts, an
  // empty text, invalid UTF-8 or a NUL byte (kInvalidArgument naming the text's index), a
  // text over max_tokens without truncate, a reranker (use Rerank).
  Result<Embeddings> Embed(const std::vector<std::string>& texts, const EmbedOptions& options = {});
  // As Embed, for inputs already tokenized: the model's token ids, used as given (no prefix, no
  // special tokens added). An empty input or an id outside the vocabulary is kInvalidArgument
  // naming the input.
  Result<Embeddings> EmbedTokens(const std::vector<std::vector<int32_t>>& inputs,
                                 const EmbedOptions& options = {});
  // Relevance of each document to `query` on a rank-pooling model: the model's rerank
  // template when its GGUF has one (tokenizer.chat_template.rerank), else the pair with the
  // vocabulary's special tokens, as llama-embedding joins it: [CLS] query [SEP] document [SEP]
  // for WordPiece, <s> query </s> document </s> for XLM-R's. Batched like Embed.
  Result<RerankResult> Rerank(const std::string& query, const std::vector<std::string>& documents,
                              const RerankOptions& options = {});

  struct Impl;

 private:
  explicit Embedder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Cosine similarity of two vectors of equal length (a dot product when both are normalized).
float cosine_similarity(std::span<const float> a, std::span<const float> b);

}  // namespace edgellm
