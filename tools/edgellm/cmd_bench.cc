// edgellm bench threads MODEL [--tokens N] [--rounds R] [--json]: wall time and CPU time per
// generated token for 1..N threads, an energy proxy where no power meter exists.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "common.h"

namespace cli {
namespace {

struct BenchArgs {
  std::string model;
  int32_t tokens = 64, rounds = 3, max_threads = -1;
  bool json = false;
};

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int run_threads(const BenchArgs& a) {
  if (a.tokens < 1 || a.tokens > 4096) {
    return fail(edgellm::Status::InvalidArgument("--tokens must be in 1..4096"));
  }
  if (a.rounds < 1 || a.rounds > 100) {
    return fail(edgellm::Status::InvalidArgument("--rounds must be in 1..100"));
  }
  const int32_t cores = edgellm::physical_cores();
  const int32_t n_max = a.max_threads > 0 ? std::min(a.max_threads, cores) : cores;
  auto model = edgellm::Model::Load(a.model);
  if (!model.ok()) return fail(model.status());

  struct Row {
    int32_t threads;
    std::unique_ptr<edgellm::Session> session;
    std::vector<double> wall_ms, cpu_ms;  // per token, one entry per round
  };
  std::vector<Row> rows;
  for (int32_t t = 1; t <= n_max; ++t) {
    edgellm::SessionOptions so;
    so.n_threads = t;
    so.n_ctx = a.tokens + 64;
    auto s = edgellm::Session::Create(**model, so);
    if (!s.ok()) return fail(s.status());
    rows.push_back({t, std::move(*s), {}, {}});
  }
  edgellm::GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = a.tokens;
  g.ignore_eos = true;
  // Rounds interleave the thread counts, so a burst of load elsewhere hits all of them.
  for (int32_t r = 0; r < a.rounds; ++r) {
    for (auto& row : rows) {
      if (!a.json) {
        std::fprintf(stderr, "\r[bench] round %d/%d, %d thread%s ...   ", r + 1, a.rounds,
                     row.threads, row.threads == 1 ? "" : "s");
      }
      const double c0 = cpu_seconds();
      const auto t0 = std::chrono::steady_clock::now();
      auto out = row.session->Generate("the", g);
      const double wall =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      const double cpu = (cpu_seconds() - c0) * 1000;
      if (!out.ok()) return fail(out.status());
      const double n = std::max(1, out->stats.n_gen);
      row.wall_ms.push_back(wall / n);
      row.cpu_ms.push_back(cpu / n);
    }
  }
  if (!a.json) std::fprintf(stderr, "\n");

  const double base_wall = median(rows.front().wall_ms), base_cpu = median(rows.front().cpu_ms);
  nlohmann::json j;
  j["model"] = a.model;
  j["tokens"] = a.tokens;
  j["rounds"] = a.rounds;
  j["physical_cores"] = cores;
  j["rows"] = nlohmann::json::array();
  if (!a.json) {
    std::printf("%7s %12s %12s %9s %10s %10s\n", "threads", "wall ms/tok", "CPU ms/tok",
                "CPU/wall", "wall vs 1", "CPU vs 1");
  }
  for (const auto& row : rows) {
    const double w = median(row.wall_ms), c = median(row.cpu_ms);
    j["rows"].push_back({{"threads", row.threads},
                         {"wall_ms_per_token", w},
                         {"cpu_ms_per_token", c},
                         {"cpu_per_wall", c / w},
                         {"wall_ratio_vs_1", w / base_wall},
                         {"cpu_ratio_vs_1", c / base_cpu},
                         {"wall_ms_rounds", row.wall_ms},
                         {"cpu_ms_rounds", row.cpu_ms}});
    if (!a.json) {
      std::printf("%7d %12.2f %12.2f %9.2f %10.3f %10.3f\n", row.threads, w, c, c / w,
                  w / base_wall, c / base_cpu);
    }
  }
  if (a.json) {
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("medians of %d rounds of %d tokens; CPU = user + system time of the whole process "
                "(getrusage), an energy proxy only: see docs/device-and-planner.md\n",
                a.rounds, a.tokens);
  }
  return 0;
}

}  // namespace

Action add_bench(CLI::App& app) {
  static BenchArgs a;
  auto* cmd = app.add_subcommand("bench", "Measurements on this device");
  cmd->require_subcommand(1);
  auto* th = cmd->add_subcommand(
      "threads", "Wall and CPU time per generated token for 1..N threads (energy proxy)");
  th->add_option("model", a.model, "GGUF model file")->required();
  th->add_option("--tokens", a.tokens, "Tokens generated per measurement (default 64)");
  th->add_option("--rounds", a.rounds, "Rounds over all thread counts; medians reported (default 3)");
  th->add_option("--max-threads", a.max_threads, "Highest thread count (default: physical cores)");
  th->add_flag("--json", a.json, "Print one JSON object");
  return [] { return run_threads(a); };
}

}  // namespace cli
