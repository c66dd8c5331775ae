// edgellm-indexbench: DocumentIndex search latency at 10k and 100k chunks (vector, lexical and
// hybrid), int8 recall@10 against f32, and the index's bytes on disk per chunk.
//
// The indexes are filled through the public API (DocumentIndex::AddText) with deterministic
// English and Chinese sentences, one 11-20-token sentence per chunk, and cached under
// build/bench-index/ (index_cache.h): building 100k chunks embeds every one of them. Searches
// run on one CPU (the process is pinned to it) with a one-thread embedder for the query, the
// f32 and int8 indexes alternating query by query.
#include <sched.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "bench_texts.h"
#include "edgellm/edgellm.h"
#include "index_cache.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string model = "build/fixtures/minilm-l6-Q8_0.gguf", cache = "build/bench-index";
  std::vector<int> sizes = {10000, 100000};
  int chunk_tokens = 20, queries = 40, reps = 3, k = 10, build_threads = 2;
  bool json = false;
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

// Queries of 2-4 words of the corpus's vocabulary, one in four Chinese.
std::vector<std::string> make_queries(int n) {
  bench::Rng rng(424242);
  std::vector<std::string> q;
  for (int i = 0; i < n; ++i) {
    const bool zh = i % 4 == 3;
    std::string s;
    const int words = rng.uniform(2, zh ? 3 : 4);
    for (int w = 0; w < words; ++w) {
      if (w && !zh) s += ' ';
      s += zh ? rng.pick(bench::chinese_words()) : rng.pick(bench::english_words());
    }
    q.push_back(s);
  }
  return q;
}

void pin_to_one_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) {
      CPU_ZERO(&set);
      CPU_SET(c, &set);
      sched_setaffinity(0, sizeof(set), &set);
      return;
    }
  }
}

int64_t file_bytes(const std::string& dir) {
  int64_t n = 0;
  for (const char* f : {"index.sqlite", "index.sqlite-wal", "index.sqlite-shm"}) {
    std::error_code ec;
    const auto s = std::filesystem::file_size(std::filesystem::path(dir) / f, ec);
    if (!ec) n += static_cast<int64_t>(s);
  }
  return n;
}

int fail(const edgellm::Status& s) {
  std::fprintf(stderr, "edgellm-indexbench: %s\n", s.ToString().c_str());
  return 1;
}

// Latencies of one size: per type and mode, plus recall and the cold first vector search.
edgellm::Result<json> measure_size(const Args& a, edgellm::Embedder& e1,
                                   const std::vector<bench::CachedIndex>& idx,
                                   const std::vector<std::string>& queries) {
  const std::vector<edgellm::SearchMode> modes = {
      edgellm::SearchMode::kVector, edgellm::SearchMode::kLexical, edgellm::SearchMode::kHybrid};
  std::vector<std::unique_ptr<edgellm::DocumentIndex>> open;
  json types = json::array();
  for (const auto& ci : idx) {
    const int64_t bytes = file_bytes(ci.dir);  // before Open adds a -shm file
    edgellm::IndexOptions io;
    io.read_only = true;
    auto ix = edgellm::DocumentIndex::Open(ci.dir, &e1, io);
    if (!ix.ok()) return ix.status();
    auto st = (*ix)->Stats();
    if (!st.ok()) return st.status();
    // The first vector search loads every vector into memory.
    edgellm::SearchOptions so{.top_k = a.k, .mode = edgellm::SearchMode::kVector};
    const auto t0 = Clock::now();
    auto r = (*ix)->Search(queries[0], so);
    if (!r.ok()) return r.status();
    types.push_back({{"type", edgellm::vector_type_name(st->vector_type)},
                     {"dir", ci.dir},
                     {"chunks", st->chunks},
                     {"build_s", ci.build_s},
                     {"reused", ci.reused},
                     {"first_search_ms", ms_since(t0)},
                     {"stats_bytes_on_disk", st->bytes_on_disk},
                     {"file_bytes", bytes},
                     {"bytes_per_chunk", static_cast<double>(bytes) / st->chunks}});
    open.push_back(std::move(*ix));
  }
  // lat[type][mode]; hits of the vector mode per type and query, for recall.
  std::vector<std::vector<std::vector<double>>> lat(open.size(),
                                                    std::vector<std::vector<double>>(modes.size()));
  std::vector<std::vector<std::set<std::pair<std::string, size_t>>>> top(
      open.size(), std::vector<std::set<std::pair<std::string, size_t>>>(queries.size()));
  for (int rep = 0; rep < a.reps; ++rep) {
    for (size_t q = 0; q < queries.size(); ++q) {
      for (size_t m = 0; m < modes.size(); ++m) {
        for (size_t t = 0; t < open.size(); ++t) {
          edgellm::SearchOptions so{.top_k = a.k, .mode = modes[m]};
          const auto t0 = Clock::now();
          auto r = open[t]->Search(queries[q], so);
          const double ms = ms_since(t0);
          if (!r.ok()) return r.status();
          lat[t][m].push_back(ms);
          if (rep == 0 && m == 0) {
            for (const auto& h : r->hits) top[t][q].insert({h.source, h.start});
          }
        }
      }
    }
  }
  for (size_t t = 0; t < open.size(); ++t) {
    for (size_t m = 0; m < modes.size(); ++m) {
      const char* name = edgellm::search_mode_name(modes[m]);
      types[t][std::string(name) + "_ms_median"] = pct(lat[t][m], 0.5);
      types[t][std::string(name) + "_ms_p90"] = pct(lat[t][m], 0.9);
    }
    double recall = 0;
    for (size_t q = 0; q < queries.size(); ++q) {
      int same = 0;
      for (const auto& h : top[t][q]) same += static_cast<int>(top[0][q].count(h));
      recall += top[0][q].empty() ? 1.0 : static_cast<double>(same) / top[0][q].size();
    }
    types[t]["recall_at_k_vs_first"] = recall / queries.size();
  }
  return types;
}

}  // namespace

int run(int argc, char** argv) {
  Args a;
  std::vector<std::string> type_names = {"f32", "int8"};
  CLI::App app{"edgellm-indexbench: DocumentIndex search latency, int8 recall and size on disk"};
  app.add_option("-m,--model", a.model, "Embedding model (default " + a.model + ")");
  app.add_option("--sizes", a.sizes,
                 "Index sizes in chunks, multiples of 100 (default 10000 100000)")
      ->delimiter(',');
  app.add_option("--types", type_names,
                 "Vector types; recall is against the first (default f32,int8)")
      ->delimiter(',');
  app.add_option("--chunk-tokens", a.chunk_tokens, "Tokens per chunk, 16-40 (default 20)");
  app.add_option("--queries", a.queries, "Queries, one in four Chinese (default 40)");
  app.add_option("--reps", a.reps, "Passes over the queries (default 3)");
  app.add_option("-k", a.k, "Hits per search (default 10)");
  app.add_option("--build-threads", a.build_threads,
                 "Threads for building the indexes (default 2)");
  app.add_option("--cache", a.cache, "Folder of the cached indexes (default " + a.cache + ")");
  app.add_flag("--json", a.json, "Print one JSON object");
  CLI11_PARSE(app, argc, argv);
  std::sort(a.sizes.begin(), a.sizes.end());
  if (a.sizes.empty() || a.sizes[0] < 100 || a.chunk_tokens < 16 || a.chunk_tokens > 40 ||
      a.queries < 1 || a.reps < 1 || a.k < 1) {
    std::fprintf(stderr,
                 "edgellm-indexbench: sizes >= 100, chunk tokens 16-40, queries, reps "
                 "and k >= 1\n");
    return 2;
  }
  std::vector<edgellm::VectorType> types;
  for (const auto& n : type_names) {
    auto t = edgellm::vector_type_from_name(n);
    if (!t.ok()) return fail(t.status());
    types.push_back(*t);
  }
  edgellm::SetLogSink([](edgellm::LogLevel, std::string_view, std::string_view) {},
                      edgellm::LogLevel::kError);
  edgellm::EmbedderOptions eo;
  eo.n_threads = a.build_threads;
  auto builder = edgellm::Embedder::Load(a.model, eo);
  if (!builder.ok()) return fail(builder.status());

  // Build (or reuse) every index, smallest first, each size grown from the one below it.
  std::vector<std::vector<bench::CachedIndex>> idx(a.sizes.size());  // [size][type]
  for (size_t s = 0; s < a.sizes.size(); ++s) {
    for (size_t t = 0; t < types.size(); ++t) {
      const bench::CachedIndex* base = s ? &idx[s - 1][t] : nullptr;
      auto ci = bench::cached_index(a.cache, **builder, types[t], a.chunk_tokens,
                                    a.sizes[s] / bench::kSentencesPerDoc, base);
      if (!ci.ok()) return fail(ci.status());
      std::fprintf(stderr, "%s: %lld chunks, built in %.0f s%s\n", ci->dir.c_str(),
                   static_cast<long long>(ci->chunks), ci->build_s, ci->reused ? " (cached)" : "");
      idx[s].push_back(*ci);
    }
  }
  builder->reset();

  pin_to_one_cpu();
  eo.n_threads = 1;
  auto e1 = edgellm::Embedder::Load(a.model, eo);
  if (!e1.ok()) return fail(e1.status());
  const std::vector<std::string> queries = make_queries(a.queries);
  // What embedding the query alone costs (the vector and hybrid figures include it).
  std::vector<double> embed_ms;
  for (int rep = 0; rep < a.reps; ++rep) {
    for (const auto& q : queries) {
      edgellm::EmbedOptions o{.kind = edgellm::TextKind::kQuery, .truncate = true};
      const auto t0 = Clock::now();
      auto r = (*e1)->Embed({q}, o);
      if (!r.ok()) return fail(r.status());
      embed_ms.push_back(ms_since(t0));
    }
  }
  json out = {{"model", a.model},
              {"chunk_tokens", a.chunk_tokens},
              {"queries", a.queries},
              {"reps", a.reps},
              {"k", a.k},
              {"search_cpus", 1},
              {"query_embed_ms_median", pct(embed_ms, 0.5)},
              {"sizes", json::array()}};
  for (size_t s = 0; s < a.sizes.size(); ++s) {
    std::fprintf(stderr, "searching %d chunks ...\n", a.sizes[s]);
    auto r = measure_size(a, **e1, idx[s], queries);
    if (!r.ok()) return fail(r.status());
    out["sizes"].push_back({{"chunks", a.sizes[s]}, {"types", *r}});
  }
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf(
      "model %s, chunks of one %d-%d-token sentence, %d queries x %d passes, top %d, "
      "one CPU; embedding a query alone: %.2f ms (median)\n",
      a.model.c_str(), a.chunk_tokens / 2 + 1, a.chunk_tokens, a.queries, a.reps, a.k,
      out["query_embed_ms_median"].get<double>());
  std::printf("%8s %5s %10s %10s %10s %10s %8s %10s %9s %8s\n", "chunks", "type", "vector ms",
              "(p90)", "lexical ms", "hybrid ms", "recall", "1st search", "B/chunk", "build s");
  for (const auto& sz : out["sizes"]) {
    for (const auto& t : sz["types"]) {
      std::printf("%8lld %5s %10.2f %10.2f %10.2f %10.2f %8.3f %10.1f %9.0f %8.0f\n",
                  static_cast<long long>(t["chunks"].get<int64_t>()),
                  t["type"].get<std::string>().c_str(), t["vector_ms_median"].get<double>(),
                  t["vector_ms_p90"].get<double>(), t["lexical_ms_median"].get<double>(),
                  t["hybrid_ms_median"].get<double>(), t["recall_at_k_vs_first"].get<double>(),
                  t["first_search_ms"].get<double>(), t["bytes_per_chunk"].get<double>(),
                  t["build_s"].get<double>());
    }
  }
  return 0;
}

// On a worker thread, as serve and the Node addon call the library (EDGELLM_BENCH_MAIN_THREAD=1:
// on the initial thread). pin_to_one_cpu pins this worker, and the threads it starts after that.
int main(int argc, char** argv) {
  int rc = 0;
  if (getenv("EDGELLM_BENCH_MAIN_THREAD")) return run(argc, argv);
  std::thread([&] { rc = run(argc, argv); }).join();
  return rc;
}
