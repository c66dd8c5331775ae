// edgellm-speccurve: where speculation pays on this CPU (issue 26's cost curve). For a model
// (e.g. the 0.5B- and 1.5B-shape fixtures), greedy decode one token per llama_decode, then
// the same generation checked k guesses at a time, the guesses being the plain run's own next
// tokens with a fraction r of them replaced by wrong ones: tokens/s and tokens per decode for
// r = 0, 0.25, 0.5, 0.75, 1 and k = 2, 4, 8, each as a ratio to plain decode measured in the
// same run. It calls llama.cpp directly (as llama-bench does), so the curve is the batch cost
// of llama_decode itself; edgellm's adaptation (src/engine/speculator.cc) checks only as many
// guesses as its own measured acceptance and batch cost say pay.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "bench_util.h"
#include "llama.h"

namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

struct Run {
  double tps = 0, per_decode = 0, accepted = 0;  // accepted: share of guesses kept
  std::vector<llama_token> out;
};

llama_token argmax(llama_context* ctx, int32_t i, int32_t n_vocab) {
  const float* l = llama_get_logits_ith(ctx, i);
  int32_t best = 0;
  for (int32_t t = 1; t < n_vocab; ++t) {
    if (l[t] > l[best]) best = t;
  }
  return best;
}

// Generates `n` tokens after the prompt (already in cells [0, n_prompt)), checking up to `k`
// guesses per decode taken from `truth` (index = generated position) with a fraction `r`
// replaced by wrong tokens; k = 0 is plain decode.
bool generate(llama_context* ctx, const llama_vocab* vocab, int32_t n_prompt, llama_token first,
              const std::vector<llama_token>& truth, int n, int k, double r, uint32_t seed,
              Run* run) {
  const int32_t n_vocab = llama_vocab_n_tokens(vocab);
  llama_memory_seq_rm(llama_get_memory(ctx), 0, n_prompt, -1);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> coin(0, 1);
  llama_batch b = llama_batch_init(k + 1, 0, 1);
  std::vector<llama_token> out = {first};
  int decodes = 0, drafted = 0, kept = 0;
  const auto t0 = Clock::now();
  while (static_cast<int>(out.size()) < n) {
    const int32_t pos = n_prompt + static_cast<int32_t>(out.size()) - 1;
    std::vector<llama_token> draft;
    for (int j = 0; j < k && out.size() + draft.size() < static_cast<size_t>(n) &&
                    out.size() + draft.size() < truth.size();
         ++j) {
      llama_token t = truth[out.size() + draft.size()];
      if (coin(rng) < r) t = (t + 1 + static_cast<llama_token>(rng() % 97)) % n_vocab;
      draft.push_back(t);
    }
    b.n_tokens = 0;
    for (size_t j = 0; j <= draft.size(); ++j) {
      b.token[j] = j == 0 ? out.back() : draft[j - 1];
      b.pos[j] = pos + static_cast<int32_t>(j);
      b.n_seq_id[j] = 1;
      b.seq_id[j][0] = 0;
      b.logits[j] = 1;
      ++b.n_tokens;
    }
    if (llama_decode(ctx, b) != 0) {
      llama_batch_free(b);
      return false;
    }
    ++decodes;
    drafted += static_cast<int>(draft.size());
    size_t a = 0;
    for (; a < draft.size(); ++a) {
      const llama_token t = argmax(ctx, static_cast<int32_t>(a), n_vocab);
      if (t != draft[a]) break;
      out.push_back(t);
    }
    kept += static_cast<int>(a);
    if (static_cast<int>(out.size()) < n) {
      out.push_back(argmax(ctx, static_cast<int32_t>(a), n_vocab));
    }
    if (a < draft.size()) {
      llama_memory_seq_rm(llama_get_memory(ctx), 0, pos + 1 + static_cast<int32_t>(a), -1);
    }
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  llama_batch_free(b);
  out.resize(static_cast<size_t>(n));
  run->tps = (n - 1) / s;
  run->per_decode = static_cast<double>(n - 1) / decodes;
  run->accepted = drafted > 0 ? static_cast<double>(kept) / drafted : 0;
  run->out = std::move(out);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edgellm-speccurve: decode tok/s against guess acceptance and batch size, "
               "llama.cpp's own calls (where speculative decoding pays on this CPU)"};
  std::string model;
  int threads = 2, tokens = 64, rounds = 2;
  bool as_json = false;
  app.add_option("-m,--model", model, "GGUF (e.g. the 0.5B- or 1.5B-shape fixture)")->required();
  app.add_option("--threads", threads, "threads (default 2)")->check(CLI::Range(1, 256));
  app.add_option("-n,--tokens", tokens, "tokens per run (default 64)")->check(CLI::Range(8, 1024));
  app.add_option("--rounds", rounds, "rounds; medians (default 2)")->check(CLI::Range(1, 50));
  app.add_flag("--json", as_json, "one JSON report");
  CLI11_PARSE(app, argc, argv);

  llama_backend_init();
  llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
  llama_model_params mp = llama_model_default_params();
  llama_model* m = llama_model_load_from_file(model.c_str(), mp);
  if (!m) {
    std::fprintf(stderr, "edgellm-speccurve: llama.cpp could not load %s\n", model.c_str());
    return 1;
  }
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 1024;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.n_seq_max = 1;
  llama_context* ctx = llama_init_from_model(m, cp);
  if (!ctx) {
    std::fprintf(stderr, "edgellm-speccurve: no context for %s\n", model.c_str());
    llama_model_free(m);
    return 1;
  }
  const llama_vocab* vocab = llama_model_get_vocab(m);
  const std::string prompt = "The lighthouse keeper wrote in his log every night, and";
  std::vector<llama_token> p(prompt.size() + 8);
  const int32_t np = llama_tokenize(vocab, prompt.data(), static_cast<int32_t>(prompt.size()),
                                    p.data(), static_cast<int32_t>(p.size()), true, false);
  if (np <= 0 || llama_decode(ctx, llama_batch_get_one(p.data(), np)) != 0) {
    std::fprintf(stderr, "edgellm-speccurve: the prompt did not decode\n");
    return 1;
  }
  const llama_token first = argmax(ctx, -1, llama_vocab_n_tokens(vocab));

  // The plain run: its tokens are the guesses' truth; its speed is the reference, measured in
  // every round beside the others.
  Run plain;
  if (!generate(ctx, vocab, np, first, {}, tokens, 0, 0, 1, &plain)) return 1;
  const std::vector<llama_token> truth = plain.out;
  const std::vector<int> ks = {2, 4, 8};
  const std::vector<double> rs = {0, 0.25, 0.5, 0.75, 1};
  std::vector<double> plain_tps;
  using Series = std::vector<std::vector<double>>;
  std::vector<Series> tps(ks.size(), Series(rs.size()));
  std::vector<std::vector<Run>> last(ks.size(), std::vector<Run>(rs.size()));
  for (int round = 0; round < rounds; ++round) {
    Run base;
    if (!generate(ctx, vocab, np, first, {}, tokens, 0, 0, 1, &base)) return 1;
    plain_tps.push_back(base.tps);
    for (size_t i = 0; i < ks.size(); ++i) {
      for (size_t j = 0; j < rs.size(); ++j) {
        Run run;
        if (!generate(ctx, vocab, np, first, truth, tokens, ks[i], rs[j], 7 + round, &run)) {
          return 1;
        }
        tps[i][j].push_back(run.tps);
        last[i][j] = std::move(run);
      }
    }
  }
  const double base = bench::median(plain_tps);
  json report = {{"model", model}, {"threads", threads}, {"tokens", tokens},
                 {"plain_tps", base}, {"curve", json::array()}};
  if (!as_json) {
    std::printf("plain decode: %.2f tok/s (median of %d)\n", base, rounds);
    std::printf("  k  r(wrong)  tok/s   x plain  tok/decode  kept  same text\n");
  }
  for (size_t i = 0; i < ks.size(); ++i) {
    for (size_t j = 0; j < rs.size(); ++j) {
      const Run& run = last[i][j];
      const double t = bench::median(tps[i][j]);
      const bool same = run.out == truth;
      report["curve"].push_back({{"k", ks[i]}, {"r", rs[j]}, {"tps", t}, {"ratio", t / base},
                                 {"tokens_per_decode", run.per_decode},
                                 {"acceptance", run.accepted}, {"same_text", same}});
      if (!as_json) {
        std::printf("  %d  %4.2f  %7.2f  %6.3f  %6.2f  %5.2f  %s\n", ks[i], rs[j], t, t / base,
                    run.per_decode, run.accepted, same ? "yes" : "no (batched logits)");
      }
    }
  }
  if (as_json) std::printf("%s\n", report.dump(2).c_str());
  llama_free(ctx);
  llama_model_free(m);
  llama_backend_free();
  return 0;
}
