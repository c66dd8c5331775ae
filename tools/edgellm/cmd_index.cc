// edgellm index add|search|remove|stats DIR: a document index on the device (SQLite).
#include <cstdio>
#include <filesystem>

#include "common.h"

namespace cli {
namespace {

struct IndexArgs {
  std::string dir, model, rerank_model, mode = "hybrid", vector_type = "f32", text, source;
  std::vector<std::string> files;
  std::string query;
  int k = 5, chunk_tokens = 200, overlap = 40, rerank_top_n = 20, threads = -1,
      max_tokens = -1;
  bool json = false;
};

// The embedder when -m is given; a null one otherwise (lexical search, stats, remove).
edgellm::Result<std::unique_ptr<edgellm::Embedder>> maybe_embedder(const IndexArgs& a) {
  if (a.model.empty()) return std::unique_ptr<edgellm::Embedder>();
  edgellm::EmbedderOptions o;
  o.n_threads = a.threads;
  o.max_tokens = a.max_tokens;
  return edgellm::Embedder::Load(a.model, o);
}

edgellm::Result<std::unique_ptr<edgellm::DocumentIndex>> open(const IndexArgs& a,
                                                              edgellm::Embedder* e,
                                                              bool read_only) {
  auto vt = edgellm::vector_type_from_name(a.vector_type);
  if (!vt.ok()) return vt.status();
  edgellm::IndexOptions o;
  o.vector_type = *vt;
  o.chunk_tokens = a.chunk_tokens;
  o.chunk_overlap = a.overlap;
  o.read_only = read_only;
  return edgellm::DocumentIndex::Open(a.dir, e, o);
}

int run_add(const IndexArgs& a) {
  if (a.files.empty() && a.text.empty()) {
    return fail(edgellm::Status::InvalidArgument("nothing to add: pass FILES or --text TEXT --source NAME"));
  }
  if (a.model.empty()) {
    return fail(edgellm::Status::InvalidArgument("adding needs the embedding model: pass -m MODEL"));
  }
  auto e = maybe_embedder(a);
  if (!e.ok()) return fail(e.status());
  auto idx = open(a, e->get(), false);
  if (!idx.ok()) return fail(idx.status());
  nlohmann::json added = nlohmann::json::array();
  auto report = [&](const edgellm::AddResult& r) {
    if (a.json) {
      added.push_back({{"source", r.source}, {"chunks", r.chunks}, {"tokens", r.tokens},
                       {"truncated", r.truncated}, {"replaced", r.replaced},
                       {"embed_ms", r.embed_ms}, {"ms", r.total_ms}});
    } else {
      std::printf("%s %s: %d chunks, %lld tokens, %.0f ms\n", r.replaced ? "replaced" : "added",
                  r.source.c_str(), r.chunks, static_cast<long long>(r.tokens), r.total_ms);
    }
  };
  edgellm::AddOptions ao;
  ao.on_progress = [](int32_t done, int32_t total) {
    if (total > 16) progress_line("embed", static_cast<float>(done) / total, done == total);
    return true;
  };
  if (!a.text.empty()) {
    auto r = (*idx)->AddText(a.source.empty() ? "text" : a.source, a.text, ao);
    if (!r.ok()) return fail(r.status());
    report(*r);
  }
  for (const std::string& f : a.files) {
    auto r = (*idx)->AddFile(f, ao);
    if (!r.ok()) return fail(r.status());
    report(*r);
  }
  if (a.json) std::printf("%s\n", nlohmann::json{{"index", a.dir}, {"added", added}}.dump(2).c_str());
  return 0;
}

int run_search(const IndexArgs& a) {
  auto mode = edgellm::search_mode_from_name(a.mode);
  if (!mode.ok()) return fail(mode.status());
  if (*mode != edgellm::SearchMode::kLexical && a.model.empty()) {
    return fail(edgellm::Status::InvalidArgument(
        std::string(edgellm::search_mode_name(*mode)) +
        " search needs the index's embedding model: pass -m MODEL, or --mode lexical"));
  }
  auto e = maybe_embedder(a);
  if (!e.ok()) return fail(e.status());
  std::unique_ptr<edgellm::Embedder> reranker;
  if (!a.rerank_model.empty()) {
    auto r = edgellm::Embedder::Load(a.rerank_model);
    if (!r.ok()) return fail(r.status());
    reranker = std::move(*r);
  }
  auto idx = open(a, e->get(), true);
  if (!idx.ok()) return fail(idx.status());
  edgellm::SearchOptions so;
  so.top_k = a.k;
  so.mode = *mode;
  so.reranker = reranker.get();
  so.rerank_top_n = a.rerank_top_n;
  auto r = (*idx)->Search(a.query, so);
  if (!r.ok()) return fail(r.status());
  if (a.json) {
    nlohmann::json hits = nlohmann::json::array();
    for (const edgellm::SearchHit& h : r->hits) {
      hits.push_back({{"chunk", h.chunk_id}, {"source", h.source}, {"start", h.start},
                      {"end", h.end}, {"score", h.score}, {"found_by", h.found_by},
                      {"vector_rank", h.vector_rank}, {"lexical_rank", h.lexical_rank},
                      {"vector_score", h.vector_score}, {"lexical_score", h.lexical_score},
                      {"rerank_score", h.rerank_score}, {"text", h.text}});
    }
    nlohmann::json j = {{"query", a.query}, {"mode", a.mode}, {"hits", hits},
                        {"chunks_searched", r->chunks_searched}, {"ms", r->ms}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  int k = 0;
  for (const edgellm::SearchHit& h : r->hits) {
    std::printf("%d. %s [%zu-%zu] score %.4f (%s)\n   %s\n", ++k, h.source.c_str(), h.start, h.end,
                h.score, h.found_by.c_str(), preview(h.text, 160).c_str());
  }
  if (r->hits.empty()) std::printf("no match\n");
  std::fprintf(stderr, "%lld chunks searched in %.1f ms\n",
               static_cast<long long>(r->chunks_searched), r->ms);
  return 0;
}

int run_remove(const IndexArgs& a) {
  if (!std::filesystem::exists(std::filesystem::path(a.dir) / "index.sqlite")) {
    return fail(edgellm::Status::NotFound("no index at " + a.dir + ": nothing to remove"));
  }
  auto idx = open(a, nullptr, false);
  if (!idx.ok()) return fail(idx.status());
  nlohmann::json removed = nlohmann::json::object();
  for (const std::string& s : a.files) {
    auto n = (*idx)->Remove(s);
    if (!n.ok()) return fail(n.status());
    removed[s] = *n;
    if (!a.json) std::printf("%s: %d chunks removed\n", s.c_str(), *n);
  }
  if (a.json) std::printf("%s\n", removed.dump(2).c_str());
  return 0;
}

int run_stats(const IndexArgs& a) {
  auto idx = open(a, nullptr, true);
  if (!idx.ok()) return fail(idx.status());
  auto s = (*idx)->Stats();
  if (!s.ok()) return fail(s.status());
  if (a.json) {
    nlohmann::json j = {{"path", s->path}, {"sources", s->sources}, {"chunks", s->chunks},
                        {"tokens", s->tokens}, {"bytes_on_disk", s->bytes_on_disk},
                        {"dims", s->dims}, {"vector_type", edgellm::vector_type_name(s->vector_type)},
                        {"model", s->model_name}, {"model_identity", s->model_identity},
                        {"chunk_tokens", s->chunk_tokens}, {"chunk_overlap", s->chunk_overlap},
                        {"source_names", s->source_names}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %lld sources, %lld chunks, %lld tokens, %s on disk\n", s->path.c_str(),
              static_cast<long long>(s->sources), static_cast<long long>(s->chunks),
              static_cast<long long>(s->tokens),
              human_bytes(static_cast<uint64_t>(s->bytes_on_disk)).c_str());
  std::printf("model %s (%d dims, %s vectors), chunks of %d tokens overlapping %d\n",
              s->model_name.empty() ? "(none yet)" : s->model_name.c_str(), s->dims,
              edgellm::vector_type_name(s->vector_type), s->chunk_tokens, s->chunk_overlap);
  for (const std::string& n : s->source_names) std::printf("  %s\n", n.c_str());
  return 0;
}

}  // namespace

Action add_index(CLI::App& app) {
  static IndexArgs a;
  auto* cmd = app.add_subcommand("index", "A document index on the device: add, search, remove, stats");
  cmd->require_subcommand(1);
  auto common = [](CLI::App* c) {
    c->add_option("dir", a.dir, "The index folder (index.sqlite inside)")->required();
    c->add_flag("--json", a.json, "Print one JSON object");
  };
  auto* add = cmd->add_subcommand("add", "Add text files (or --text) to the index, replacing same sources");
  common(add);
  add->add_option("files", a.files, "UTF-8 text files");
  add->add_option("-m,--model", a.model, "The embedding model (GGUF)");
  add->add_option("--text", a.text, "A text to add instead of files");
  add->add_option("--source", a.source, "The source name of --text (default \"text\")");
  add->add_option("--vectors", a.vector_type, "f32 or int8, for a new index (default f32)");
  add->add_option("--chunk-tokens", a.chunk_tokens, "Tokens per chunk, for a new index (default 200)");
  add->add_option("--overlap", a.overlap, "Tokens of overlap, for a new index (default 40)");
  add->add_option("--threads", a.threads, "Threads (default: physical cores)");
  add->add_option("--max-tokens", a.max_tokens,
                  "The embedder's tokens per text (default: its context, at most 512)");
  auto* search = cmd->add_subcommand("search", "Search the index");
  common(search);
  search->add_option("query", a.query, "What to look for")->required();
  search->add_option("-m,--model", a.model, "The index's embedding model (vector and hybrid search)");
  search->add_option("--mode", a.mode, "hybrid (default), vector or lexical");
  search->add_option("-k,--top-k", a.k, "Hits to return (default 5)");
  search->add_option("--rerank-model", a.rerank_model, "Rerank the fused top n with this model");
  search->add_option("--rerank-top-n", a.rerank_top_n, "Candidates to rerank (default 20)");
  search->add_option("--threads", a.threads, "Threads (default: physical cores)");
  auto* remove = cmd->add_subcommand("remove", "Remove sources (file paths as added) from the index");
  common(remove);
  remove->add_option("sources", a.files, "Source names")->required();
  auto* stats = cmd->add_subcommand("stats", "Sources, chunks, model and size of an index");
  common(stats);
  return [cmd] {
    if (cmd->got_subcommand("add")) return run_add(a);
    if (cmd->got_subcommand("search")) return run_search(a);
    if (cmd->got_subcommand("remove")) return run_remove(a);
    return run_stats(a);
  };
}

}  // namespace cli
