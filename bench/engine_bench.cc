// edgellm-bench: edgellm's prefill and decode throughput next to llama.cpp's own llama-bench,
// on the same model file and thread count, printed as ratios (and --json).
//
// Both sides measure the same work: pp = a P-token prompt decoded in one batch from an empty
// context; tg = G single-token decode steps from an empty context. edgellm's decode figure also
// includes its per-token sampling and UTF-8 streaming, which llama-bench does not do.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "bench_util.h"
#include "edgellm/edgellm.h"

namespace {

struct Args {
  std::string model, llama_bench, load_mode = "mmap";
  int threads = -1, pp = 512, tg = 128, reps = 2, rounds = 3;
  bool json = false;
};

double mean(const std::vector<double>& v) {
  return v.empty() ? 0 : std::accumulate(v.begin(), v.end(), 0.0) / v.size();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Runs llama-bench once; returns {pp t/s, tg t/s}.
bool run_llama_bench(const Args& a, int threads, double* pp, double* tg) {
  const std::string cmd = a.llama_bench + " -m '" + a.model + "' -t " + std::to_string(threads) +
                          " -p " + std::to_string(a.pp) + " -n " + std::to_string(a.tg) +
                          " -r " + std::to_string(a.reps) +
                          " -lm " + (a.load_mode == "read" ? "none" : "mmap") + " -o json 2>/dev/null";
  std::string out;
  if (!bench::capture(cmd, &out)) return false;
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) return false;
  for (const auto& t : j) {
    if (t["n_prompt"].get<int>() > 0 && t["n_gen"].get<int>() == 0) *pp = t["avg_ts"].get<double>();
    if (t["n_gen"].get<int>() > 0 && t["n_prompt"].get<int>() == 0) *tg = t["avg_ts"].get<double>();
  }
  return *pp > 0 && *tg > 0;
}


}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"edgellm-bench: edgellm vs llama-bench, same model and threads"};
  app.add_option("-m,--model", a.model, "GGUF model")->required();
  app.add_option("--threads", a.threads, "Threads for both (default: physical cores)");
  app.add_option("-p,--pp", a.pp, "Prompt tokens (default 512)");
  app.add_option("-n,--tg", a.tg, "Generated tokens (default 128)");
  app.add_option("-r,--reps", a.reps, "Repetitions per round (default 2)");
  app.add_option("--rounds", a.rounds, "Alternating rounds of both engines (default 3)");
  app.add_option("--llama-bench", a.llama_bench, "llama-bench binary (default: beside this one)");
  app.add_option("--load-mode", a.load_mode, "mmap (default) or read, for both engines")
      ->check(CLI::IsMember({"mmap", "read"}));
  app.add_flag("--json", a.json, "Print one JSON object");
  CLI11_PARSE(app, argc, argv);
  if (a.llama_bench.empty()) {
    a.llama_bench = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "llama-bench")
                        .string();
  }
  if (a.pp < 1 || a.tg < 1 || a.reps < 1 || a.rounds < 1) {
    std::fprintf(stderr, "edgellm-bench: -p, -n, -r and --rounds must be >= 1\n");
    return 2;
  }
  const int threads = a.threads > 0 ? a.threads : edgellm::physical_cores();

  edgellm::LoadOptions lo;
  lo.mode = a.load_mode == "read" ? edgellm::LoadMode::kRead : edgellm::LoadMode::kMmap;
  auto model = edgellm::Model::Load(a.model, lo);
  if (!model.ok()) {
    std::fprintf(stderr, "edgellm-bench: %s\n", model.status().ToString().c_str());
    return 1;
  }
  edgellm::SessionOptions so;
  so.n_threads = threads;
  so.n_batch = a.pp;
  so.n_ctx = std::max(a.pp, a.tg + 1) + 16;
  const std::string pp_prompt = bench::prompt_of(**model, a.pp);

  std::vector<double> lb_pp, lb_tg, el_pp, el_tg, round_pp, round_tg;
  int n_prompt = 0;
  for (int round = 0; round < a.rounds; ++round) {
    double pp = 0, tg = 0;
    std::fprintf(stderr, "[round %d/%d] llama-bench ...\n", round + 1, a.rounds);
    if (!run_llama_bench(a, threads, &pp, &tg)) {
      std::fprintf(stderr, "edgellm-bench: running %s failed: build it with scripts/setup.sh\n",
                   a.llama_bench.c_str());
      return 1;
    }
    lb_pp.push_back(pp);
    lb_tg.push_back(tg);
    std::fprintf(stderr, "[round %d/%d] edgellm ...\n", round + 1, a.rounds);
    // A fresh context per round, as llama-bench makes one per test.
    auto session = edgellm::Session::Create(**model, so);
    if (!session.ok()) {
      std::fprintf(stderr, "edgellm-bench: %s\n", session.status().ToString().c_str());
      return 1;
    }
    std::vector<double> r_pp, r_tg;
    // Like llama-bench: all prompt runs back to back, then all generation runs, so both
    // engines reuse the compute graph of the previous call of the same shape.
    for (int r = 0; r < a.reps; ++r) {
      edgellm::GenerateOptions g;
      g.temperature = 0;
      g.max_tokens = 1;
      auto p = (*session)->Generate(pp_prompt, g);
      if (!p.ok()) {
        std::fprintf(stderr, "edgellm-bench: %s\n", p.status().ToString().c_str());
        return 1;
      }
      n_prompt = p->stats.n_prompt;
      r_pp.push_back(p->stats.prefill_tps);
    }
    for (int r = 0; r < a.reps; ++r) {
      edgellm::GenerateOptions d;
      d.temperature = 0;
      d.max_tokens = a.tg + 1;  // the first token comes from the prompt's logits
      d.ignore_eos = true;
      auto t = (*session)->Generate("the", d);
      if (!t.ok()) {
        std::fprintf(stderr, "edgellm-bench: %s\n", t.status().ToString().c_str());
        return 1;
      }
      r_tg.push_back(t->stats.decode_tps);
    }
    el_pp.push_back(mean(r_pp));
    el_tg.push_back(mean(r_tg));
    round_pp.push_back(el_pp.back() / pp);
    round_tg.push_back(el_tg.back() / tg);
    std::fprintf(stderr, "[round %d/%d] pp %.2f vs %.2f (%.3f), tg %.2f vs %.2f (%.3f)\n",
                 round + 1, a.rounds, el_pp.back(), pp, round_pp.back(), el_tg.back(), tg,
                 round_tg.back());
  }
  // The machine is shared and noisy: each round runs both engines back to back, and the
  // reported ratio is the median of the per-round ratios.
  const double r_pp = median(round_pp), r_tg = median(round_tg);
  const edgellm::ModelInfo& info = (*model)->info();
  if (a.json) {
    nlohmann::json j = {{"model", a.model},          {"description", info.description},
                        {"threads", threads},        {"n_prompt", n_prompt},
                        {"n_gen", a.tg},             {"reps", a.reps},
                        {"rounds", a.rounds},        {"load_mode", a.load_mode},
                        {"llama_bench_pp_tps", mean(lb_pp)},
                        {"edgellm_prefill_tps", mean(el_pp)}, {"prefill_ratio", r_pp},
                        {"llama_bench_tg_tps", mean(lb_tg)},  {"edgellm_decode_tps", mean(el_tg)},
                        {"decode_ratio", r_tg},
                        {"prefill_ratio_per_round", round_pp},
                        {"decode_ratio_per_round", round_tg}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model: %s (%s), threads %d, load %s, %d reps x %d rounds\n", a.model.c_str(),
              info.description.c_str(), threads, a.load_mode.c_str(), a.reps, a.rounds);
  std::printf("%-10s %16s %16s %8s %s\n", "test", "llama-bench t/s", "edgellm t/s", "ratio",
              "(median of per-round ratios; min-max)");
  auto mm = [](const std::vector<double>& v) {
    return std::to_string(*std::min_element(v.begin(), v.end())).substr(0, 5) + "-" +
           std::to_string(*std::max_element(v.begin(), v.end())).substr(0, 5);
  };
  std::printf("%-10s %16.2f %16.2f %8.3f %s\n", ("pp" + std::to_string(n_prompt)).c_str(),
              mean(lb_pp), mean(el_pp), r_pp, mm(round_pp).c_str());
  std::printf("%-10s %16.2f %16.2f %8.3f %s\n", ("tg" + std::to_string(a.tg)).c_str(),
              mean(lb_tg), mean(el_tg), r_tg, mm(round_tg).c_str());
  return 0;
}
