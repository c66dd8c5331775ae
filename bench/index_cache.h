// The benchmark indexes of edgellm-indexbench, built once through DocumentIndex::AddText and
// kept under build/bench-index/<key>/ (key: the embedding model's identity, the vector type, the
// chunk size, the number of chunks and the text generator's version), so later runs reuse them.
// A folder counts only once its bench.json is written (after the last add); until then its
// partial.json says how far the build got. Public API only.
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_texts.h"
#include "edgellm/edgellm.h"

namespace bench {

constexpr int kGeneratorVersion = 1;
constexpr int kSentencesPerDoc = 100;

// Chunks are whole sentences of 11-20 tokens with chunk_tokens 20 and no overlap: two never
// fit together, so every sentence is exactly one chunk and a document of 100 sentences is 100
// chunks.
inline std::string document(const edgellm::Embedder& e, int doc, int chunk_tokens) {
  Rng rng(1000003ULL * static_cast<uint64_t>(doc + 1));
  std::string text;
  for (int i = 0; i < kSentencesPerDoc; ++i) {
    if (i) text += ' ';
    text += sentence_of_tokens(rng, e, chunk_tokens / 2 + 1, chunk_tokens);
  }
  return text;
}

inline std::string doc_name(int doc) {
  char b[32];
  std::snprintf(b, sizeof(b), "doc-%06d", doc);
  return b;
}

struct CachedIndex {
  std::string dir;
  int docs = 0;
  int64_t chunks = 0;
  double build_s = 0;  // total, including the smaller index it was grown from
  bool reused = false;
};

inline std::string cache_key(const edgellm::Embedder& e, edgellm::VectorType t, int chunk_tokens,
                             int docs) {
  return e.info().identity.substr(0, 16) + "-" + edgellm::vector_type_name(t) + "-c" +
         std::to_string(chunk_tokens) + "-n" + std::to_string(docs * kSentencesPerDoc) + "-g" +
         std::to_string(kGeneratorVersion);
}

// Adds documents [from, to) to the index in `dir` (creating it); returns chunks added. Every 10
// documents it records how far it got in partial.json (`prior_chunks` and `prior_s` carried),
// so a build that is stopped resumes there.
inline edgellm::Result<int64_t> add_docs(const std::string& dir, edgellm::Embedder& e,
                                         edgellm::VectorType t, int chunk_tokens, int from, int to,
                                         int64_t prior_chunks, double prior_s) {
  edgellm::IndexOptions io;
  io.vector_type = t;
  io.chunk_tokens = chunk_tokens;
  io.chunk_overlap = 0;
  auto index = edgellm::DocumentIndex::Open(dir, &e, io);
  if (!index.ok()) return index.status();
  int64_t chunks = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int d = from; d < to; ++d) {
    auto r = (*index)->AddText(doc_name(d), document(e, d, chunk_tokens));
    if (!r.ok()) return r.status();
    chunks += r->chunks;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if ((d + 1) % 10 == 0) {
      std::ofstream(dir + "/partial.json") << nlohmann::json{
          {"docs", d + 1},
          {"chunks", prior_chunks + chunks},
          {"build_s", prior_s + s}}.dump();
    }
    if ((d - from + 1) % 50 == 0 || d + 1 == to) {
      std::fprintf(stderr, "  %s: %d/%d documents, %lld chunks, %.0f s\n", dir.c_str(), d + 1, to,
                   static_cast<long long>(prior_chunks + chunks), prior_s + s);
    }
  }
  return chunks;
}

// The index of `docs` documents: reused when its folder is complete, else grown from `base`
// (an index of the first documents, copied) or built from nothing; an interrupted build
// (partial.json) resumes where it stopped.
inline edgellm::Result<CachedIndex> cached_index(const std::string& root, edgellm::Embedder& e,
                                                 edgellm::VectorType t, int chunk_tokens, int docs,
                                                 const CachedIndex* base) {
  namespace fs = std::filesystem;
  CachedIndex out;
  out.dir = root + "/" + cache_key(e, t, chunk_tokens, docs);
  const fs::path marker = fs::path(out.dir) / "bench.json";
  if (fs::exists(marker)) {
    std::ifstream in(marker);
    auto j = nlohmann::json::parse(in, nullptr, false);
    if (!j.is_discarded()) {
      out.docs = j.value("docs", 0);
      out.chunks = j.value("chunks", int64_t{0});
      out.build_s = j.value("build_s", 0.0);
      out.reused = true;
      return out;
    }
  }
  std::error_code ec;
  int from = 0;
  double prior_s = 0;
  std::ifstream partial(fs::path(out.dir) / "partial.json");
  auto p = nlohmann::json::parse(partial, nullptr, false);
  if (partial && !p.is_discarded() && fs::exists(fs::path(out.dir) / "index.sqlite")) {
    // An interrupted build: every add is one transaction, so documents [0, docs) are in.
    from = p.value("docs", 0);
    out.chunks = p.value("chunks", int64_t{0});
    prior_s = p.value("build_s", 0.0);
    std::fprintf(stderr, "resuming %s at document %d\n", out.dir.c_str(), from);
  } else {
    fs::remove_all(out.dir, ec);
    fs::create_directories(out.dir, ec);
    if (base) {
      fs::copy_file(fs::path(base->dir) / "index.sqlite", fs::path(out.dir) / "index.sqlite", ec);
      if (ec) return edgellm::Status::Internal("copying " + base->dir + ": " + ec.message());
      from = base->docs;
      out.chunks = base->chunks;
      prior_s = base->build_s;
    }
  }
  std::fprintf(stderr, "building %s (%d documents of %d sentences) ...\n", out.dir.c_str(), docs,
               kSentencesPerDoc);
  const auto t0 = std::chrono::steady_clock::now();
  auto added = add_docs(out.dir, e, t, chunk_tokens, from, docs, out.chunks, prior_s);
  if (!added.ok()) return added.status();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.docs = docs;
  out.chunks += *added;
  out.build_s = s + prior_s;
  std::ofstream(marker) << nlohmann::json{
      {"docs", docs},
      {"chunks", out.chunks},
      {"build_s", out.build_s},
      {"grown_from", base ? base->dir : ""},
      {"model",
       e.info().model_path}}.dump(1);
  return out;
}

}  // namespace bench
