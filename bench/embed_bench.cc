// edgellm-embedbench: embeddings and rerank, edgellm against llama.cpp's llama-server on the
// same file and threads, side by side in one run.
//
//  embed:  256 texts of 16-128 tokens (English and Chinese) as one request: the library in
//          process (Embedder::Embed), `edgellm serve --embedding-model` and llama-server
//          --embedding, both over HTTP /v1/embeddings with the texts as one array. Tokens/s.
//  rerank: a query and 40 documents of ~100 tokens: Embedder::Rerank, serve's /v1/rerank and
//          llama-server --reranking /v1/rerank. Latency, and the largest difference of the raw
//          scores.
// Each round runs every side once, the order rotated; ratios are medians of per-round ratios.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "bench_texts.h"
#include "edgellm/edgellm.h"
#include "ref_server.h"

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Args {
  std::string model = "build/fixtures/minilm-l6-Q8_0.gguf";
  std::string reranker = "build/fixtures/bge-reranker-base-Q8_0.gguf";
  std::string bin_dir, dump_texts, parts = "embed,rerank";
  int threads = 2, texts = 256, min_tokens = 16, max_tokens = 128, docs = 40, doc_tokens = 100;
  int rounds = 5, parallel = 8;
  bool json = false;
};

const char* kSides[] = {"library", "serve", "llama-server"};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "edgellm-embedbench: %s\n", what.c_str());
  std::exit(1);
}

std::unique_ptr<edgellm::Embedder> load(const std::string& path, int threads) {
  edgellm::EmbedderOptions o;
  o.n_threads = threads;
  auto e = edgellm::Embedder::Load(path, o);
  if (!e.ok()) die(e.status().ToString());
  return std::move(*e);
}

std::vector<std::string> make_texts(const edgellm::Embedder& e, int n, int lo, int hi,
                                    uint64_t seed) {
  bench::Rng rng(seed);
  std::vector<std::string> t;
  for (int i = 0; i < n; ++i) t.push_back(bench::text_of_tokens(rng, e, rng.uniform(lo, hi - 2)));
  return t;
}

// The server pair for `model`: edgellm serve and llama-server with the same threads.
void start_servers(const Args& a, const edgellm::Embedder& e, const std::string& llama_mode,
                   bench::RefServer* serve, bench::RefServer* llama) {
  const std::string& model = e.info().model_path;
  std::string err;
  if (!serve->Start("serve",
                    {a.bin_dir + "/edgellm", "serve", "--embedding-model", model, "--threads",
                     std::to_string(a.threads)},
                    &err)) {
    die(err);
  }
  // Every text (or query/document pair) fits one slot and one ubatch; -np slots batched
  // together per decode, as many tokens per decode (512) as edgellm's default.
  std::vector<std::string> args = {a.bin_dir + "/llama-server",
                                   "-m",
                                   model,
                                   "-t",
                                   std::to_string(a.threads),
                                   "-tb",
                                   std::to_string(a.threads),
                                   "-c",
                                   std::to_string(512 * a.parallel),
                                   "-np",
                                   std::to_string(a.parallel),
                                   "-b",
                                   "512",
                                   "-ub",
                                   "512",
                                   "--no-webui"};
  args.insert(args.end(), {llama_mode});
  if (llama_mode == "--embedding") {
    args.insert(args.end(), {"--pooling", edgellm::pooling_name(e.info().pooling)});
  }
  if (!llama->Start("llama-server", args, &err)) die(err);
}

// Rounds of `sides` (order rotated); returns per side the wall ms of each round.
template <class F>
std::vector<std::vector<double>> rounds(int n, F run) {
  std::vector<std::vector<double>> ms(3);
  for (int r = 0; r < n; ++r) {
    for (int i = 0; i < 3; ++i) {
      const int side = (i + r) % 3;
      const auto t0 = Clock::now();
      run(side);
      ms[side].push_back(ms_since(t0));
    }
    std::fprintf(stderr, "  round %d/%d: library %.0f ms, serve %.0f ms, llama-server %.0f ms\n",
                 r + 1, n, ms[0].back(), ms[1].back(), ms[2].back());
  }
  return ms;
}

// Median of per-round ratios x[i] / y[i].
double ratio(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> r;
  for (size_t i = 0; i < x.size(); ++i) r.push_back(x[i] / y[i]);
  return median(r);
}

json bench_embed(const Args& a) {
  auto e = load(a.model, a.threads);
  const auto texts = make_texts(*e, a.texts, a.min_tokens, a.max_tokens, 2024);
  auto lib = e->Embed(texts);
  if (!lib.ok()) die(lib.status().ToString());
  const int64_t tokens = lib->stats.n_tokens;
  const auto [mn, mx] = std::minmax_element(lib->n_tokens.begin(), lib->n_tokens.end());
  std::fprintf(stderr, "embed: %s, %zu texts, %lld tokens (%d-%d per text)\n", a.model.c_str(),
               texts.size(), static_cast<long long>(tokens), *mn, *mx);
  bench::RefServer serve, llama;
  start_servers(a, *e, "--embedding", &serve, &llama);
  const std::string body =
      json{{"input", texts}, {"model", "m"}, {"encoding_format", "float"}}.dump();
  json answers[3];
  auto run = [&](int side) {
    std::string err;
    if (side == 0) {
      auto r = e->Embed(texts);
      if (!r.ok()) die(r.status().ToString());
      return;
    }
    const std::string out = (side == 1 ? serve : llama).Post("/v1/embeddings", body, &err);
    if (out.empty()) die(err);
    answers[side] = json::parse(out);
  };
  for (int side = 0; side < 3; ++side) run(side);  // warm-up, and the vectors to compare
  double max_diff = 0;
  int64_t llama_tokens = answers[2]["usage"]["prompt_tokens"].get<int64_t>();
  for (const auto& d : answers[2]["data"]) {
    const auto v = d["embedding"].get<std::vector<float>>();
    const auto ref = lib->vector(d["index"].get<size_t>());
    for (size_t j = 0; j < v.size() && j < ref.size(); ++j) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(v[j] - ref[j])));
    }
  }
  const auto ms = rounds(a.rounds, run);
  json j = {{"model", a.model},
            {"texts", texts.size()},
            {"tokens", tokens},
            {"llama_server_prompt_tokens", llama_tokens},
            {"max_abs_diff_vs_llama_server", max_diff}};
  for (int s = 0; s < 3; ++s) {
    std::vector<double> tps;
    for (double m : ms[s]) tps.push_back(1000.0 * tokens / m);
    j[kSides[s]] = {{"ms", ms[s]}, {"tok_s_median", median(tps)}};
  }
  j["library_vs_llama_server"] = ratio(ms[2], ms[0]);  // throughput ratio: their ms / our ms
  j["serve_vs_llama_server"] = ratio(ms[2], ms[1]);
  return j;
}

json bench_rerank(const Args& a) {
  auto e = load(a.reranker, a.threads);
  bench::Rng rng(77);
  const std::string query = bench::sentence(rng, 8, false);
  const auto docs = make_texts(*e, a.docs, a.doc_tokens - 10, a.doc_tokens + 10, 4048);
  auto lib = e->Rerank(query, docs);
  if (!lib.ok()) die(lib.status().ToString());
  std::fprintf(stderr, "rerank: %s, %zu documents, %lld tokens in all pairs\n", a.reranker.c_str(),
               docs.size(), static_cast<long long>(lib->stats.n_tokens));
  bench::RefServer serve, llama;
  start_servers(a, *e, "--reranking", &serve, &llama);
  const std::string body =
      json{{"query", query}, {"documents", docs}, {"top_n", docs.size()}, {"model", "m"}}.dump();
  json answers[3];
  auto run = [&](int side) {
    std::string err;
    if (side == 0) {
      auto r = e->Rerank(query, docs);
      if (!r.ok()) die(r.status().ToString());
      return;
    }
    const std::string out = (side == 1 ? serve : llama).Post("/v1/rerank", body, &err);
    if (out.empty()) die(err);
    answers[side] = json::parse(out);
  };
  for (int side = 0; side < 3; ++side) run(side);
  double diff[3] = {0, 0, 0};  // serve vs library, llama-server vs library
  for (int s = 1; s < 3; ++s) {
    for (const auto& r : answers[s]["results"]) {
      const double d = r["relevance_score"].get<double>() - lib->scores[r["index"].get<size_t>()];
      diff[s] = std::max(diff[s], std::fabs(d));
    }
  }
  const auto ms = rounds(a.rounds, run);
  json j = {{"model", a.reranker},
            {"documents", docs.size()},
            {"tokens", lib->stats.n_tokens},
            {"max_abs_diff_serve_vs_library", diff[1]},
            {"max_abs_diff_llama_server_vs_library", diff[2]}};
  for (int s = 0; s < 3; ++s) j[kSides[s]] = {{"ms", ms[s]}, {"ms_median", median(ms[s])}};
  j["library_vs_llama_server"] = ratio(ms[0], ms[2]);  // latency ratio: our ms / their ms
  j["serve_vs_llama_server"] = ratio(ms[1], ms[2]);
  return j;
}

}  // namespace

int run(int argc, char** argv) {
  Args a;
  CLI::App app{"edgellm-embedbench: embeddings and rerank, edgellm vs llama-server"};
  app.add_option("-m,--model", a.model, "Embedding model (default " + a.model + ")");
  app.add_option("--reranker", a.reranker, "Rerank model (default " + a.reranker + ")");
  app.add_option("--threads", a.threads, "Threads for every side (default 2)");
  app.add_option("--texts", a.texts, "Texts to embed (default 256)");
  app.add_option("--min-tokens", a.min_tokens, "Shortest text in tokens (default 16)");
  app.add_option("--max-tokens", a.max_tokens, "Longest text in tokens (default 128)");
  app.add_option("--docs", a.docs, "Documents to rerank (default 40)");
  app.add_option("--doc-tokens", a.doc_tokens, "Tokens per document, about (default 100)");
  app.add_option("--rounds", a.rounds, "Rounds; each runs every side once (default 5)");
  app.add_option("--parallel", a.parallel, "llama-server's slots, -np (default 8)");
  app.add_option("--parts", a.parts, "embed, rerank or both (default embed,rerank)");
  app.add_option("--bin-dir", a.bin_dir, "Where edgellm and llama-server are (default: here)");
  app.add_option("--dump-texts", a.dump_texts, "Write the texts to embed, one a line, and exit");
  app.add_flag("--json", a.json, "Print one JSON object");
  CLI11_PARSE(app, argc, argv);
  if (a.bin_dir.empty()) {
    a.bin_dir = std::filesystem::read_symlink("/proc/self/exe").parent_path().string();
  }
  if (a.rounds < 1 || a.texts < 1 || a.docs < 1 || a.min_tokens < 4 ||
      a.max_tokens <= a.min_tokens + 2) {
    die("rounds, texts and docs >= 1, and 4 <= min-tokens < max-tokens - 2");
  }
  edgellm::SetLogSink([](edgellm::LogLevel, std::string_view, std::string_view) {},
                      edgellm::LogLevel::kError);
  if (!a.dump_texts.empty()) {
    auto e = load(a.model, a.threads);
    std::ofstream out(a.dump_texts);
    for (const auto& t : make_texts(*e, a.texts, a.min_tokens, a.max_tokens, 2024))
      out << t << "\n";
    return out ? 0 : 1;
  }
  json out = {{"threads", a.threads}, {"rounds", a.rounds}, {"llama_server_parallel", a.parallel}};
  if (a.parts.find("embed") != std::string::npos) out["embed"] = bench_embed(a);
  if (a.parts.find("rerank") != std::string::npos) out["rerank"] = bench_rerank(a);
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf(
      "threads %d, %d rounds, llama-server -np %d; ratios are medians of per-round ratios\n",
      a.threads, a.rounds, a.parallel);
  if (out.contains("embed")) {
    const json& j = out["embed"];
    std::printf("embed %s: %d texts, %lld tokens; tok/s (median)\n", a.model.c_str(),
                j["texts"].get<int>(), static_cast<long long>(j["tokens"].get<int64_t>()));
    for (const char* s : kSides)
      std::printf("  %-13s %9.0f\n", s, j[s]["tok_s_median"].get<double>());
    std::printf(
        "  library / llama-server %.3fx, serve / llama-server %.3fx (throughput; >= 1 is "
        "faster); max |vector diff| %.2g\n",
        j["library_vs_llama_server"].get<double>(), j["serve_vs_llama_server"].get<double>(),
        j["max_abs_diff_vs_llama_server"].get<double>());
  }
  if (out.contains("rerank")) {
    const json& j = out["rerank"];
    std::printf("rerank %s: %d documents, %lld tokens; ms (median)\n", a.reranker.c_str(),
                j["documents"].get<int>(), static_cast<long long>(j["tokens"].get<int64_t>()));
    for (const char* s : kSides) std::printf("  %-13s %9.1f\n", s, j[s]["ms_median"].get<double>());
    std::printf(
        "  library / llama-server %.3fx, serve / llama-server %.3fx (latency; <= 1 is "
        "faster); max |score diff| vs library: llama-server %.3g, serve %.3g\n",
        j["library_vs_llama_server"].get<double>(), j["serve_vs_llama_server"].get<double>(),
        j["max_abs_diff_llama_server_vs_library"].get<double>(),
        j["max_abs_diff_serve_vs_library"].get<double>());
  }
  return 0;
}

// The work runs on a worker thread, as serve and the Node addon call the library
// (EDGELLM_BENCH_MAIN_THREAD=1: on the initial thread, to compare; docs/benchmarks.md,
// Retrieval, has the in-process vs serve gap this was checked against).
int main(int argc, char** argv) {
  int rc = 0;
  if (getenv("EDGELLM_BENCH_MAIN_THREAD")) return run(argc, argv);
  std::thread([&] { rc = run(argc, argv); }).join();
  return rc;
}
