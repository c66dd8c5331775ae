// JS values of the retrieval types: embedder info, vectors as Float32Array, rerank results,
// search hits, index stats (see retrieval_js.h; their TypeScript shapes are in index.d.ts).
#include "retrieval_js.h"

#include <cstring>
#include <string>

namespace edgellm::node {
namespace {

// A JS array of numbers (scores, token counts).
template <typename T>
napi_value numbers(napi_env env, const std::vector<T>& v) {
  napi_value a = nullptr;
  napi_create_array_with_length(env, v.size(), &a);
  for (size_t i = 0; i < v.size(); ++i) {
    napi_set_element(env, a, static_cast<uint32_t>(i), make_number(env, static_cast<double>(v[i])));
  }
  return a;
}

napi_value stats_object(napi_env env, const EmbedStats& s) {
  napi_value o = make_object(env);
  set(env, o, "texts", static_cast<double>(s.n_texts));
  set(env, o, "tokens", static_cast<double>(s.n_tokens));
  set(env, o, "truncated", static_cast<double>(s.n_truncated));
  set(env, o, "decodes", static_cast<double>(s.n_decodes));
  set(env, o, "tokenizeMs", s.tokenize_ms);
  set(env, o, "decodeMs", s.decode_ms);
  set(env, o, "totalMs", s.total_ms);
  return o;
}

// A Float32Array over its own ArrayBuffer holding a copy of `n` floats.
napi_value float32_array(napi_env env, const float* src, size_t n) {
  void* data = nullptr;
  napi_value buffer = nullptr, array = nullptr;
  if (napi_create_arraybuffer(env, n * sizeof(float), &data, &buffer) != napi_ok) return nullptr;
  if (n) std::memcpy(data, src, n * sizeof(float));
  if (napi_create_typedarray(env, napi_float32_array, n, buffer, 0, &array) != napi_ok) {
    return nullptr;
  }
  return array;
}

}  // namespace

napi_value embedder_info_object(napi_env env, const EmbedderInfo& i) {
  napi_value o = make_object(env);
  set(env, o, "path", i.model_path);
  set(env, o, "name", i.model_name);
  set(env, o, "arch", i.arch);
  set(env, o, "identity", i.identity);
  set(env, o, "pooling", pooling_name(i.pooling));
  set(env, o, "dims", static_cast<double>(i.dims));
  set(env, o, "maxTokens", static_cast<double>(i.max_tokens));
  set(env, o, "batchTokens", static_cast<double>(i.batch_tokens));
  set(env, o, "batchTexts", static_cast<double>(i.batch_texts));
  set(env, o, "canEmbed", i.can_embed);
  set(env, o, "canRerank", i.can_rerank);
  set(env, o, "hasRerankTemplate", i.has_rerank_template);
  set(env, o, "queryPrefix", i.query_prefix);
  set(env, o, "documentPrefix", i.document_prefix);
  return o;
}

napi_value embeddings_object(napi_env env, const Embeddings& e) {
  napi_value vectors = nullptr, truncated = nullptr;
  napi_create_array_with_length(env, e.size(), &vectors);
  napi_create_array_with_length(env, e.size(), &truncated);
  for (size_t i = 0; i < e.size(); ++i) {
    const auto v = e.vector(i);
    napi_value a = float32_array(env, v.data(), v.size());
    if (!a) return nullptr;
    napi_set_element(env, vectors, static_cast<uint32_t>(i), a);
    napi_set_element(env, truncated, static_cast<uint32_t>(i), make_bool(env, e.truncated[i] != 0));
  }
  napi_value o = make_object(env);
  set(env, o, "vectors", vectors);
  set(env, o, "dims", static_cast<double>(e.dims));
  set(env, o, "nTokens", numbers(env, e.n_tokens));
  set(env, o, "truncated", truncated);
  set(env, o, "stats", stats_object(env, e.stats));
  return o;
}

napi_value rerank_object(napi_env env, const RerankResult& r) {
  napi_value o = make_object(env);
  set(env, o, "scores", numbers(env, r.scores));
  set(env, o, "probabilities", numbers(env, r.probabilities));
  set(env, o, "order", numbers(env, r.order));
  set(env, o, "nTokens", numbers(env, r.n_tokens));
  set(env, o, "stats", stats_object(env, r.stats));
  return o;
}

napi_value hit_object(napi_env env, const SearchHit& h) {
  napi_value o = make_object(env);
  set(env, o, "chunkId", static_cast<double>(h.chunk_id));
  set(env, o, "source", h.source);
  set(env, o, "start", static_cast<double>(h.start));
  set(env, o, "end", static_cast<double>(h.end));
  set(env, o, "text", h.text);
  set(env, o, "score", static_cast<double>(h.score));
  set(env, o, "foundBy", h.found_by);
  set(env, o, "vectorRank", static_cast<double>(h.vector_rank));
  set(env, o, "lexicalRank", static_cast<double>(h.lexical_rank));
  set(env, o, "vectorScore", static_cast<double>(h.vector_score));
  set(env, o, "lexicalScore", static_cast<double>(h.lexical_score));
  if (h.rerank_score != 0) set(env, o, "rerankScore", static_cast<double>(h.rerank_score));
  return o;
}

napi_value hits_array(napi_env env, const std::vector<SearchHit>& hits) {
  napi_value a = nullptr;
  napi_create_array_with_length(env, hits.size(), &a);
  for (size_t i = 0; i < hits.size(); ++i) {
    napi_set_element(env, a, static_cast<uint32_t>(i), hit_object(env, hits[i]));
  }
  return a;
}

napi_value index_stats_object(napi_env env, const IndexStats& s) {
  napi_value o = make_object(env);
  set(env, o, "path", s.path);
  set(env, o, "sources", static_cast<double>(s.sources));
  set(env, o, "chunks", static_cast<double>(s.chunks));
  set(env, o, "tokens", static_cast<double>(s.tokens));
  set(env, o, "bytesOnDisk", static_cast<double>(s.bytes_on_disk));
  set(env, o, "dims", static_cast<double>(s.dims));
  set(env, o, "vectorType", vector_type_name(s.vector_type));
  set(env, o, "modelName", s.model_name);
  set(env, o, "modelIdentity", s.model_identity);
  set(env, o, "chunkTokens", static_cast<double>(s.chunk_tokens));
  set(env, o, "chunkOverlap", static_cast<double>(s.chunk_overlap));
  napi_value names = nullptr;
  napi_create_array_with_length(env, s.source_names.size(), &names);
  for (size_t i = 0; i < s.source_names.size(); ++i) {
    napi_set_element(env, names, static_cast<uint32_t>(i), make_string(env, s.source_names[i]));
  }
  set(env, o, "sourceNames", names);
  return o;
}

napi_value add_result_object(napi_env env, const AddResult& a) {
  napi_value o = make_object(env);
  set(env, o, "source", a.source);
  set(env, o, "chunks", static_cast<double>(a.chunks));
  set(env, o, "tokens", static_cast<double>(a.tokens));
  set(env, o, "truncated", static_cast<double>(a.truncated));
  set(env, o, "replaced", a.replaced);
  set(env, o, "embedMs", a.embed_ms);
  set(env, o, "totalMs", a.total_ms);
  return o;
}

bool read_search_options(napi_env env, napi_value o, SearchOptions* out) {
  std::string mode;
  if (!opt_int(env, o, "topK", &out->top_k) || !opt_int(env, o, "rerankTopN", &out->rerank_top_n) ||
      !opt_string(env, o, "mode", &mode)) {
    return false;
  }
  if (!mode.empty()) {
    auto m = search_mode_from_name(mode);
    if (!m.ok()) {
      throw_status(env, m.status());
      return false;
    }
    out->mode = *m;
  }
  return true;
}

}  // namespace edgellm::node
