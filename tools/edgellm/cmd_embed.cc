// edgellm embed / rerank: texts to vectors, documents ordered by relevance to a query.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common.h"

namespace cli {
namespace {

struct EmbedArgs {
  std::string model, file, pooling = "model", query;
  std::vector<std::string> texts;
  int threads = -1, batch_texts = -1, batch_tokens = -1, max_tokens = -1;
  bool json = false, as_query = false, no_normalize = false, truncate = false;
  int top_n = 0;
};

// --file F: one text per non-empty line.
edgellm::Status read_lines(const std::string& file, std::vector<std::string>* out) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return edgellm::Status::NotFound("text file not found: " + file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out->push_back(line);
  }
  return edgellm::Status::Ok();
}

edgellm::Result<std::unique_ptr<edgellm::Embedder>> load(const EmbedArgs& a) {
  auto pooling = edgellm::pooling_from_name(a.pooling);
  if (!pooling.ok()) return pooling.status();
  edgellm::EmbedderOptions o;
  o.pooling = *pooling;
  o.n_threads = a.threads;
  o.batch_texts = a.batch_texts;
  o.batch_tokens = a.batch_tokens;
  o.max_tokens = a.max_tokens;
  return edgellm::Embedder::Load(a.model, o);
}

bool progress(int32_t done, int32_t total) {
  if (total > 64) progress_line("embed", static_cast<float>(done) / total, done == total);
  return true;
}

nlohmann::json stats_json(const edgellm::EmbedStats& s) {
  return {{"texts", s.n_texts},         {"tokens", s.n_tokens},
          {"truncated", s.n_truncated}, {"decodes", s.n_decodes},
          {"ms", s.total_ms},
          {"tokens_per_s", s.total_ms > 0 ? 1000.0 * s.n_tokens / s.total_ms : 0}};
}

void add_common(CLI::App* cmd, EmbedArgs* a) {
  cmd->add_option("-m,--model", a->model, "Embedding or rerank model (GGUF)")->required();
  cmd->add_option("-f,--file", a->file, "Read texts from a file, one per line");
  cmd->add_option("--threads", a->threads, "Threads (default: physical cores)");
  cmd->add_option("--batch-texts", a->batch_texts, "Texts per decode, at most (default 64)");
  cmd->add_option("--max-tokens", a->max_tokens,
                  "Tokens per text, at most (default: the model's context, at most 512)");
  cmd->add_option("--batch-tokens", a->batch_tokens,
                  "Tokens per decode, at most (default max(512, --max-tokens))");
  cmd->add_flag("--truncate", a->truncate, "Cut texts longer than the model takes (default: error)");
  cmd->add_flag("--json", a->json, "Print one JSON object");
}

}  // namespace

Action add_embed(CLI::App& app) {
  static EmbedArgs a;
  auto* cmd = app.add_subcommand("embed", "Turn texts into vectors with an embedding model");
  add_common(cmd, &a);
  cmd->add_option("-p,--text", a.texts, "A text to embed (repeat for several)");
  cmd->add_option("--pooling", a.pooling, "model (from the file), mean, cls or last");
  cmd->add_flag("--query", a.as_query, "The texts are search queries (adds the model's query prefix)");
  cmd->add_flag("--no-normalize", a.no_normalize, "Raw vectors (default: length 1)");
  return [] {
    if (!a.file.empty()) {
      if (auto st = read_lines(a.file, &a.texts); !st.ok()) return fail(st);
    }
    if (a.texts.empty()) {
      return fail(edgellm::Status::InvalidArgument("no texts: pass -p TEXT or -f FILE"));
    }
    auto e = load(a);
    if (!e.ok()) return fail(e.status());
    edgellm::EmbedOptions o;
    o.kind = a.as_query ? edgellm::TextKind::kQuery : edgellm::TextKind::kDocument;
    o.normalize = !a.no_normalize;
    o.truncate = a.truncate;
    o.on_progress = progress;
    auto r = (*e)->Embed(a.texts, o);
    if (!r.ok()) return fail(r.status());
    const edgellm::EmbedderInfo& info = (*e)->info();
    if (a.json) {
      nlohmann::json j = {{"model", info.model_path},
                          {"pooling", edgellm::pooling_name(info.pooling)},
                          {"dims", r->dims},
                          {"normalized", o.normalize},
                          {"tokens", r->n_tokens},
                          {"stats", stats_json(r->stats)}};
      nlohmann::json vecs = nlohmann::json::array();
      for (size_t i = 0; i < r->size(); ++i) {
        auto v = r->vector(i);
        vecs.push_back(std::vector<float>(v.begin(), v.end()));
      }
      j["embeddings"] = std::move(vecs);
      std::printf("%s\n", j.dump().c_str());
      return 0;
    }
    for (size_t i = 0; i < r->size(); ++i) {
      auto v = r->vector(i);
      std::printf("text %zu (%d tokens%s): [", i, r->n_tokens[i], r->truncated[i] ? ", truncated" : "");
      for (size_t k = 0; k < v.size(); ++k) {
        if (k == 4 && v.size() > 8) {
          std::printf(" ...");
          k = v.size() - 4;
        }
        std::printf("%s%.6f", k ? " " : "", v[k]);
      }
      std::printf("] %d dims\n", r->dims);
    }
    std::fprintf(stderr, "%d texts, %lld tokens in %d decodes, %.1f ms (%.0f tokens/s)\n",
                 r->stats.n_texts, static_cast<long long>(r->stats.n_tokens), r->stats.n_decodes,
                 r->stats.total_ms,
                 r->stats.total_ms > 0 ? 1000.0 * r->stats.n_tokens / r->stats.total_ms : 0.0);
    return 0;
  };
}

Action add_rerank(CLI::App& app) {
  static EmbedArgs a;
  auto* cmd = app.add_subcommand("rerank", "Order documents by relevance to a query (a rerank model)");
  add_common(cmd, &a);
  cmd->add_option("-q,--query", a.query, "The query")->required();
  cmd->add_option("documents", a.texts, "Documents (or -f FILE, one per line)");
  cmd->add_option("--top-n", a.top_n, "Print only the best N (default: all)");
  return [] {
    if (!a.file.empty()) {
      if (auto st = read_lines(a.file, &a.texts); !st.ok()) return fail(st);
    }
    if (a.texts.empty()) {
      return fail(edgellm::Status::InvalidArgument("no documents: pass them after the query or -f FILE"));
    }
    auto e = load(a);
    if (!e.ok()) return fail(e.status());
    edgellm::RerankOptions o;
    o.truncate = a.truncate;
    o.on_progress = progress;
    auto r = (*e)->Rerank(a.query, a.texts, o);
    if (!r.ok()) return fail(r.status());
    const size_t n = a.top_n > 0 ? std::min<size_t>(static_cast<size_t>(a.top_n), r->order.size())
                                 : r->order.size();
    if (a.json) {
      nlohmann::json results = nlohmann::json::array();
      for (size_t k = 0; k < n; ++k) {
        const auto i = static_cast<size_t>(r->order[k]);
        results.push_back({{"index", i}, {"score", r->scores[i]},
                           {"probability", r->probabilities[i]}, {"tokens", r->n_tokens[i]},
                           {"document", a.texts[i]}});
      }
      nlohmann::json j = {{"model", (*e)->info().model_path}, {"query", a.query},
                          {"results", results}, {"stats", stats_json(r->stats)}};
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    for (size_t k = 0; k < n; ++k) {
      const auto i = static_cast<size_t>(r->order[k]);
      std::printf("%2zu. [%zu] score %8.4f  p %.4f  %s\n", k + 1, i, r->scores[i],
                  r->probabilities[i], preview(a.texts[i], 60).c_str());
    }
    std::fprintf(stderr, "%d pairs, %lld tokens in %d decodes, %.1f ms\n", r->stats.n_texts,
                 static_cast<long long>(r->stats.n_tokens), r->stats.n_decodes, r->stats.total_ms);
    return 0;
  };
}

}  // namespace cli
