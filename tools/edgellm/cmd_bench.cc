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
  std::string model, lora;
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

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// LoRA swap cost: the adapter's load, the SetLora/RemoveLora calls, and what the first request
// after a swap pays over a steady one (llama.cpp re-reserves the compute graph then).
int run_lora(const BenchArgs& a) {
  if (a.rounds < 1 || a.rounds > 100) {
    return fail(edgellm::Status::InvalidArgument("--rounds must be in 1..100"));
  }
  if (a.tokens < 1 || a.tokens > 4096) {
    return fail(edgellm::Status::InvalidArgument("--tokens must be in 1..4096"));
  }
  auto model = edgellm::Model::Load(a.model);
  if (!model.ok()) return fail(model.status());
  std::vector<double> load_ms;
  for (int32_t r = 0; r < a.rounds; ++r) {
    auto ad = edgellm::LoraAdapter::Load(**model, a.lora);
    if (!ad.ok()) return fail(ad.status());
    load_ms.push_back((*ad)->info().load_ms);
  }
  auto adapter = edgellm::LoraAdapter::Load(**model, a.lora);
  if (!adapter.ok()) return fail(adapter.status());
  edgellm::SessionOptions so;
  so.n_ctx = a.tokens + 128;
  auto session = edgellm::Session::Create(**model, so);
  if (!session.ok()) return fail(session.status());
  edgellm::GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = a.tokens;
  g.ignore_eos = true;
  // Short, so TTFT is little more than one decode step and a swap's extra cost stands out.
  const char* prompt = "Hello";
  std::vector<double> apply_us, remove_us, ttft_base, ttft_on_first, ttft_on, ttft_off_first,
      tps_base, tps_on;
  auto gen = [&](std::vector<double>* ttft, std::vector<double>* tps) -> edgellm::Status {
    auto out = (*session)->Generate(prompt, g);
    if (!out.ok()) return out.status();
    ttft->push_back(out->stats.ttft_ms);
    if (tps) tps->push_back(out->stats.decode_tps);
    return edgellm::Status::Ok();
  };
  std::vector<double> scratch;
  if (auto st = gen(&scratch, nullptr); !st.ok()) return fail(st);  // settle
  for (int32_t r = 0; r < a.rounds; ++r) {
    if (!a.json) std::fprintf(stderr, "\r[bench] round %d/%d ...   ", r + 1, a.rounds);
    edgellm::Status st = gen(&ttft_base, &tps_base);
    auto t0 = std::chrono::steady_clock::now();
    if (st.ok()) st = (*session)->SetLora(*adapter, 1.0f);
    apply_us.push_back(ms_since(t0) * 1000);
    if (st.ok()) st = gen(&ttft_on_first, nullptr);
    if (st.ok()) st = gen(&ttft_on, &tps_on);
    t0 = std::chrono::steady_clock::now();
    if (st.ok()) st = (*session)->RemoveLora(**adapter);
    remove_us.push_back(ms_since(t0) * 1000);
    if (st.ok()) st = gen(&ttft_off_first, nullptr);
    if (!st.ok()) return fail(st);
  }
  if (!a.json) std::fprintf(stderr, "\n");
  const edgellm::LoraInfo& li = (*adapter)->info();
  const double on_over = median(ttft_on_first) - median(ttft_on);
  const double off_over = median(ttft_off_first) - median(ttft_base);
  nlohmann::json j = {{"model", a.model},
                      {"lora", a.lora},
                      {"rank", li.rank},
                      {"matrices", li.n_pairs},
                      {"lora_bytes", li.file_bytes},
                      {"rounds", a.rounds},
                      {"tokens", a.tokens},
                      {"load_ms", median(load_ms)},
                      {"apply_us", median(apply_us)},
                      {"remove_us", median(remove_us)},
                      {"ttft_base_ms", median(ttft_base)},
                      {"ttft_lora_ms", median(ttft_on)},
                      {"ttft_first_after_apply_ms", median(ttft_on_first)},
                      {"ttft_first_after_remove_ms", median(ttft_off_first)},
                      {"swap_on_overhead_ms", on_over},
                      {"swap_off_overhead_ms", off_over},
                      {"decode_tps_base", median(tps_base)},
                      {"decode_tps_lora", median(tps_on)},
                      {"decode_ratio_lora_vs_base", median(tps_on) / median(tps_base)}};
  if (a.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("LoRA %s: rank %d, %d matrices, %s\n", a.lora.c_str(), li.rank, li.n_pairs,
              human_bytes(li.file_bytes).c_str());
  std::printf("load (LoraAdapter::Load)        %9.2f ms\n", median(load_ms));
  std::printf("apply (SetLora call)            %9.1f us\n", median(apply_us));
  std::printf("remove (RemoveLora call)        %9.1f us\n", median(remove_us));
  std::printf("TTFT base / with LoRA (steady)  %9.2f / %.2f ms\n", median(ttft_base),
              median(ttft_on));
  std::printf("first request after apply       %9.2f ms (%+.2f ms over steady)\n",
              median(ttft_on_first), on_over);
  std::printf("first request after remove      %9.2f ms (%+.2f ms over steady)\n",
              median(ttft_off_first), off_over);
  std::printf("decode base / with LoRA         %9.2f / %.2f tok/s (%.3f)\n", median(tps_base),
              median(tps_on), median(tps_on) / median(tps_base));
  std::printf("medians of %d rounds, %d tokens each, greedy\n", a.rounds, a.tokens);
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
  auto* lo = cmd->add_subcommand(
      "lora", "LoRA swap cost: adapter load, apply/remove, first request after a swap, decode");
  lo->add_option("model", a.model, "GGUF model file")->required();
  lo->add_option("--lora", a.lora, "GGUF LoRA adapter for the model")->required();
  lo->add_option("--tokens", a.tokens, "Tokens generated per request (default 64)");
  lo->add_option("--rounds", a.rounds, "Rounds; medians reported (default 3)");
  lo->add_flag("--json", a.json, "Print one JSON object");
  return [cmd, lo] { return cmd->got_subcommand(lo) ? run_lora(a) : run_threads(a); };
}

}  // namespace cli
