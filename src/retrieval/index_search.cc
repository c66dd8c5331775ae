// DocumentIndex::Search: exact vector search, FTS5/BM25 lexical search, reciprocal rank
// fusion, and an optional rerank of the fused top n.
#include <algorithm>
#include <chrono>
#include <map>

#include "core/sys.h"
#include "retrieval/embedder_impl.h"
#include "retrieval/index_impl.h"
#include "retrieval/lexical.h"

namespace edgellm {
namespace {

constexpr float kRrfK = 60;  // reciprocal rank fusion's constant (Cormack et al. 2009)

}  // namespace

const char* search_mode_name(SearchMode m) {
  switch (m) {
    case SearchMode::kVector: return "vector";
    case SearchMode::kLexical: return "lexical";
    case SearchMode::kHybrid: return "hybrid";
  }
  return "unknown";
}

Result<SearchMode> search_mode_from_name(const std::string& name) {
  for (SearchMode m : {SearchMode::kVector, SearchMode::kLexical, SearchMode::kHybrid}) {
    if (name == search_mode_name(m)) return m;
  }
  return Status::InvalidArgument("unknown search mode '" + name + "': use vector, lexical or hybrid");
}

Status DocumentIndex::Impl::LoadVectorsIfChanged() {
  auto version = db->DataVersion();
  if (!version.ok()) return version.status();
  if (vectors && !vectors_stale && *version == vectors_version) return Status::Ok();
  if (dims == 0) {  // another connection may have added the first document since Open
    auto s = db->Prepare("SELECT value FROM meta WHERE key = 'dims'");
    if (!s.ok()) return s.status();
    auto row = s->Step();
    if (!row.ok()) return row.status();
    if (*row) dims = static_cast<int32_t>(s->Int(0));
  }
  retrieval::VectorMatrix m(vector_type, dims);
  auto s = db->Prepare("SELECT id, vector FROM chunks");
  if (!s.ok()) return s.status();
  for (;;) {
    auto row = s->Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    EDGELLM_RETURN_IF_ERROR(m.Append(s->Int(0), s->Blob(1)));
  }
  vectors = std::move(m);
  vectors_version = *version;
  vectors_stale = false;
  return Status::Ok();
}

Result<SearchResult> DocumentIndex::Search(const std::string& query, const SearchOptions& o) {
  Impl& m = *impl_;
  const auto t0 = std::chrono::steady_clock::now();
  EDGELLM_RETURN_IF_ERROR(check_text(query, "the query"));
  if (o.top_k < 1 || o.top_k > 1000) {
    return Status::InvalidArgument("top_k is " + std::to_string(o.top_k) + ": use 1..1000");
  }
  if (o.reranker && (o.rerank_top_n < 1 || o.rerank_top_n > 1000)) {
    return Status::InvalidArgument("rerank_top_n is " + std::to_string(o.rerank_top_n) +
                                   ": use 1..1000");
  }
  if (o.reranker && !o.reranker->info().can_rerank) {
    return Status::InvalidArgument(o.reranker->info().model_path + " is not a reranker");
  }
  const int32_t keep = o.reranker ? std::max(o.top_k, o.rerank_top_n) : o.top_k;
  const int32_t candidates = o.mode == SearchMode::kHybrid ? std::max(keep * 4, 50) : keep;
  SearchResult out;

  struct Fused {
    int32_t vector_rank = 0, lexical_rank = 0;
    float vector_score = 0, lexical_score = 0, score = 0;
  };
  std::map<int64_t, Fused> fused;
  if (o.mode != SearchMode::kLexical) {
    auto e = m.RequireEmbedder("search");
    if (!e.ok()) return e.status();
    EDGELLM_RETURN_IF_ERROR(m.LoadVectorsIfChanged());
    out.chunks_searched = static_cast<int64_t>(m.vectors->rows());
    if (m.vectors->rows() > 0) {
      EmbedOptions eo;
      eo.kind = TextKind::kQuery;
      eo.truncate = true;
      auto q = (*e)->Embed({query}, eo);
      if (!q.ok()) return q.status();
      const auto top = m.vectors->TopK(q->vector(0), candidates);
      for (size_t r = 0; r < top.size(); ++r) {
        Fused& f = fused[top[r].second];
        f.vector_rank = static_cast<int32_t>(r + 1);
        f.vector_score = top[r].first;
      }
    }
  }
  if (o.mode != SearchMode::kVector) {
    const std::string expr = retrieval::fts_query(query);
    if (!expr.empty()) {
      auto s = m.db->Prepare("SELECT rowid, bm25(chunks_fts) FROM chunks_fts "
                             "WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?");
      if (!s.ok()) return s.status();
      s->Bind(1, expr).Bind(2, static_cast<int64_t>(candidates));
      for (int32_t r = 1;; ++r) {
        auto row = s->Step();
        if (!row.ok()) return row.status();
        if (!*row) break;
        Fused& f = fused[s->Int(0)];
        f.lexical_rank = r;
        f.lexical_score = static_cast<float>(-s->Double(1));  // bm25(): lower is better
      }
    }
    if (o.mode == SearchMode::kLexical) {
      auto n = m.db->Prepare("SELECT COUNT(*) FROM chunks");
      if (!n.ok()) return n.status();
      auto row = n->Step();
      if (!row.ok()) return row.status();
      out.chunks_searched = n->Int(0);
    }
  }
  std::vector<std::pair<int64_t, Fused>> ranked(fused.begin(), fused.end());
  for (auto& [id, f] : ranked) {
    switch (o.mode) {
      case SearchMode::kVector: f.score = f.vector_score; break;
      case SearchMode::kLexical: f.score = f.lexical_score; break;
      case SearchMode::kHybrid:
        f.score = (f.vector_rank ? 1 / (kRrfK + f.vector_rank) : 0) +
                  (f.lexical_rank ? 1 / (kRrfK + f.lexical_rank) : 0);
        break;
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.score > b.second.score; });
  if (static_cast<int32_t>(ranked.size()) > keep) ranked.resize(static_cast<size_t>(keep));

  auto get = m.db->Prepare("SELECT s.name, c.start, c.end, c.text FROM chunks c "
                           "JOIN sources s ON s.id = c.source_id WHERE c.id = ?");
  if (!get.ok()) return get.status();
  for (const auto& [id, f] : ranked) {
    get->Reset();
    get->Bind(1, id);
    auto row = get->Step();
    if (!row.ok()) return row.status();
    if (!*row) continue;  // removed by another connection since the vectors were loaded
    SearchHit h;
    h.chunk_id = id;
    h.source = get->Text(0);
    h.start = static_cast<size_t>(get->Int(1));
    h.end = static_cast<size_t>(get->Int(2));
    h.text = get->Text(3);
    h.score = f.score;
    h.vector_rank = f.vector_rank;
    h.lexical_rank = f.lexical_rank;
    h.vector_score = f.vector_score;
    h.lexical_score = f.lexical_score;
    h.found_by = f.vector_rank && f.lexical_rank ? "both" : f.vector_rank ? "vector" : "lexical";
    out.hits.push_back(std::move(h));
  }
  if (o.reranker && !out.hits.empty()) {
    std::vector<std::string> docs;
    for (const SearchHit& h : out.hits) docs.push_back(h.text);
    RerankOptions ro;
    ro.truncate = true;
    auto r = o.reranker->Rerank(query, docs, ro);
    if (!r.ok()) return r.status();
    std::vector<SearchHit> reordered;
    for (int32_t i : r->order) {
      SearchHit h = out.hits[static_cast<size_t>(i)];
      h.rerank_score = r->scores[static_cast<size_t>(i)];
      h.score = h.rerank_score;
      reordered.push_back(std::move(h));
    }
    out.hits = std::move(reordered);
  }
  if (static_cast<int32_t>(out.hits.size()) > o.top_k) out.hits.resize(static_cast<size_t>(o.top_k));
  out.ms = ms_since(t0);
  return out;
}

}  // namespace edgellm
