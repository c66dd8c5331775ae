// DocumentIndex: the user's own texts, chunked, embedded and stored in one SQLite file, for
// on-device retrieval: vector search (exact cosine), lexical search (FTS5 with BM25, Chinese
// without spaces), hybrid search (reciprocal rank fusion) and an optional rerank.
//
// Thread safety: one DocumentIndex is used from one thread at a time. Several processes (or
// several DocumentIndex objects) may open the same folder: readers keep searching the last
// committed state while one writer adds or removes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "edgellm/embed.h"
#include "edgellm/status.h"

namespace edgellm {

// How vectors are stored (and searched): f32 (4 bytes a dimension) or int8 (1 byte a
// dimension plus a scale per vector; recall@10 against f32 measured in bench/index_bench.cc).
enum class VectorType { kF32, kInt8 };
const char* vector_type_name(VectorType t);
Result<VectorType> vector_type_from_name(const std::string& name);

struct IndexOptions {
  // For a new index only (an existing one keeps what it was made with):
  VectorType vector_type = VectorType::kF32;
  // Tokens per chunk, at most (the embedder's max_tokens minus its special tokens and
  // document prefix, at most). Default 200.
  int32_t chunk_tokens = 200;
  // Tokens a chunk repeats from the one before it (whole sentences). Default 40.
  int32_t chunk_overlap = 40;
  // Open without writing (search and stats only). Default false.
  bool read_only = false;
};

struct AddOptions {
  // Called with chunks embedded so far and the total; return false to cancel (kCancelled;
  // the index is unchanged).
  std::function<bool(int32_t done, int32_t total)> on_progress;
};

struct AddResult {
  std::string source;
  int32_t chunks = 0;
  int64_t tokens = 0;
  int32_t truncated = 0;   // chunks cut to fit the embedder
  bool replaced = false;   // the source was in the index before (its old chunks are gone)
  double embed_ms = 0;
  double total_ms = 0;
};

enum class SearchMode { kVector, kLexical, kHybrid };
const char* search_mode_name(SearchMode m);
Result<SearchMode> search_mode_from_name(const std::string& name);

struct SearchOptions {
  int32_t top_k = 5;
  // Default kHybrid: both rankings fused by reciprocal rank (1 / (60 + rank)). kVector and
  // kHybrid need the index's embedding model (Open's embedder).
  SearchMode mode = SearchMode::kHybrid;
  // A reranker (rank pooling Embedder): the fused top `rerank_top_n` are scored with the
  // query and reordered by that score. Default none.
  Embedder* reranker = nullptr;
  int32_t rerank_top_n = 20;
};

struct SearchHit {
  int64_t chunk_id = 0;
  std::string source;
  size_t start = 0, end = 0;  // bytes of the source's text
  std::string text;
  float score = 0;          // what the hits are ordered by (fused, or rerank, or one ranking's)
  // Which ranking found it ("vector", "lexical" or "both") and where (1-based; 0: not in it).
  std::string found_by;
  int32_t vector_rank = 0, lexical_rank = 0;
  float vector_score = 0;   // cosine similarity
  float lexical_score = 0;  // BM25 (higher is better)
  float rerank_score = 0;   // raw, when reranked
};

struct SearchResult {
  std::vector<SearchHit> hits;
  double ms = 0;
  int64_t chunks_searched = 0;
};

struct IndexStats {
  std::string path;            // the SQLite file
  int64_t sources = 0, chunks = 0, tokens = 0;
  int64_t bytes_on_disk = 0;   // the database and its WAL
  int32_t dims = 0;
  VectorType vector_type = VectorType::kF32;
  std::string model_name, model_identity;  // of the embeddings stored
  int32_t chunk_tokens = 0, chunk_overlap = 0;
  std::vector<std::string> source_names;
};

class DocumentIndex {
 public:
  // Opens the index in folder `dir` (index.sqlite), creating both unless read_only.
  // `embedder` (may be null: lexical search, stats and remove only) must outlive the index; an
  // index made with another embedding model refuses it (kFailedPrecondition naming both). A
  // damaged database is kCorruptData saying what to do.
  static Result<std::unique_ptr<DocumentIndex>> Open(const std::string& dir, Embedder* embedder,
                                                     const IndexOptions& options = {});
  ~DocumentIndex();
  DocumentIndex(const DocumentIndex&) = delete;
  DocumentIndex& operator=(const DocumentIndex&) = delete;

  // Adds `text` as `source` (a name: a file path, a note's id), replacing what the index held
  // for that source. Chunks are embedded first; then one transaction replaces the source, so a
  // process killed at any point leaves the index as it was or with the whole add.
  Result<AddResult> AddText(const std::string& source, const std::string& text,
                            const AddOptions& options = {});
  // Reads a UTF-8 text file and adds it with its path as the source.
  Result<AddResult> AddFile(const std::string& path, const AddOptions& options = {});
  // Removes a source's chunks: the number removed (0 when it was not there).
  Result<int32_t> Remove(const std::string& source);
  Result<SearchResult> Search(const std::string& query, const SearchOptions& options = {});
  Result<IndexStats> Stats();

  struct Impl;
  Impl* impl() const { return impl_.get(); }

 private:
  explicit DocumentIndex(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Grounded answers: a user's question with the index's best chunks before it, numbered, with
// their sources, for a chat turn (Conversation::Send or Session::Generate). The chunks go into
// the user's turn, not the system prompt, so a conversation's earlier turns keep their KV
// cache, and a context overflow drops a turn together with the chunks it was answered from.
struct GroundOptions {
  SearchOptions search = {.top_k = 3};  // default: hybrid, top 3
  // At most this many tokens of chunks (the embedder's tokenizer; whole chunks, best first).
  // Default 1024.
  int32_t max_context_tokens = 1024;
  // The line before the chunks. Default: an instruction to answer from them and cite them.
  std::string instruction =
      "Answer the question using the notes below; cite them by number, like [1]. If the notes "
      "do not answer it, say so.";
};

struct Grounded {
  std::string prompt;             // instruction, "[1] (source) text", ..., then the question
  std::vector<SearchHit> cited;   // the chunks in the prompt, [1] first
  double search_ms = 0;
};

// kInvalidArgument for an empty question; with no hit, the prompt is the question alone.
Result<Grounded> ground_question(DocumentIndex& index, const std::string& question,
                                 const GroundOptions& options = {});

}  // namespace edgellm
