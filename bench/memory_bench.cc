// edgellm-membench: measured peak resident memory per phase next to the MemoryPlanner's plan.
//
// Every row runs in a fresh child process (this binary with --one), so nothing one row
// allocated is still resident in the next. In the child:
//   baseline  VmRSS before anything is loaded (the executable and its libraries);
//   load      peak while Model::Load + Session::Create (+ warm-up) run;
//   prefill   peak while a prompt of n_ctx - 64 tokens is decoded in n_batch chunks;
//   decode    peak while 32 tokens are generated after it;
//   released  VmRSS after Session::ReleaseKv().
// Peaks are VmHWM from /proc/self/status, reset between phases by writing 5 to
// /proc/self/clear_refs (Linux >= 4.0). The plan (plan_memory, computed in the parent from the
// GGUF header and libllama's no_alloc dry run) is compared with what the model adds to the
// process: max(phase peaks) - baseline.
#include <CLI/CLI.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "edgellm/edgellm.h"
#include "edgellm/planner.h"

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kDecodeTokens = 32;

bool reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

int64_t status_kb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  const std::string k = std::string(key) + ":";
  while (std::getline(f, line)) {
    if (line.rfind(k, 0) == 0) return std::stoll(line.substr(k.size())) * 1024;
  }
  return 0;
}


int fail(const std::string& what) {
  std::fprintf(stderr, "edgellm-membench: %s\n", what.c_str());
  return 1;
}

// The child: one row, printed as one JSON line on stdout.
int run_one(const std::string& model_path, const std::string& mode, int n_ctx, int n_batch) {
  if (!reset_peak()) return fail("cannot write /proc/self/clear_refs: peaks per phase need it");
  nlohmann::json j;
  j["baseline"] = status_kb("VmRSS");

  reset_peak();
  edgellm::LoadOptions lo;
  lo.mode = mode == "read" ? edgellm::LoadMode::kRead : edgellm::LoadMode::kMmap;
  auto model = edgellm::Model::Load(model_path, lo);
  if (!model.ok()) return fail(model.status().ToString());
  edgellm::SessionOptions so;
  so.n_ctx = n_ctx;
  so.n_batch = n_batch;
  auto session = edgellm::Session::Create(**model, so);
  if (!session.ok()) return fail(session.status().ToString());
  j["load_peak"] = status_kb("VmHWM");
  j["after_load"] = status_kb("VmRSS");
  j["after_load_file"] = status_kb("RssFile");

  const int n_prompt = n_ctx - 2 * kDecodeTokens;
  const std::string prompt = bench::prompt_of(**model, n_prompt);
  reset_peak();
  int64_t prefill_peak = 0;
  edgellm::GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = kDecodeTokens;
  g.ignore_eos = true;
  g.on_prefill = [&](int32_t done, int32_t total) {
    if (done == total) {
      prefill_peak = status_kb("VmHWM");
      reset_peak();
    }
    return true;
  };
  auto r = (*session)->Generate(prompt, g);
  if (!r.ok()) return fail(r.status().ToString());
  j["prefill_peak"] = prefill_peak;
  j["decode_peak"] = status_kb("VmHWM");
  j["n_prompt"] = r->stats.n_prompt;
  j["n_gen"] = r->stats.n_gen;
  j["prefill_tps"] = r->stats.prefill_tps;
  j["anon_after_decode"] = status_kb("RssAnon");
  j["file_after_decode"] = status_kb("RssFile");
  (*session)->ReleaseKv();
  j["released"] = status_kb("VmRSS");
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool run_child(const std::string& self, const std::string& model, const std::string& mode,
               int ctx, int batch, nlohmann::json* out) {
  const std::string cmd = "'" + self + "' --one -m '" + model + "' --modes " + mode +
                          " --ctx " + std::to_string(ctx) + " --batch " + std::to_string(batch);
  std::string text;
  if (!bench::capture(cmd, &text)) return false;
  *out = nlohmann::json::parse(text, nullptr, false);
  return !out->is_discarded();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models;
  std::string ctxs = "1024,2048,4096", modes = "mmap,read", batches = "512";
  bool one = false, json = false;
  CLI::App app{"edgellm-membench: peak RSS per phase (load, prefill, decode, after ReleaseKv) "
               "next to the MemoryPlanner's plan; one child process per row"};
  app.add_option("-m,--model", models, "GGUF model (repeat for several)")->required();
  app.add_option("--ctx", ctxs, "Context lengths, comma-separated (default 1024,2048,4096)");
  app.add_option("--modes", modes, "Load modes, comma-separated: mmap,read (default both)");
  app.add_option("--batch", batches, "Prefill chunk sizes, comma-separated (default 512)");
  app.add_flag("--json", json, "Print one JSON object");
  app.add_flag("--one", one, "(internal) measure one row in this process")->group("");
  CLI11_PARSE(app, argc, argv);

  std::vector<int> ctx_list, batch_list;
  try {
    for (const auto& c : split(ctxs)) ctx_list.push_back(std::stoi(c));
    for (const auto& b : split(batches)) batch_list.push_back(std::stoi(b));
  } catch (...) {
    return fail("--ctx and --batch take comma-separated integers, e.g. --ctx 1024,2048");
  }
  const auto mode_list = split(modes);
  for (const auto& m : mode_list) {
    if (m != "mmap" && m != "read") return fail("--modes takes mmap and/or read, not '" + m + "'");
  }
  for (int c : ctx_list) {
    if (c < 4 * kDecodeTokens) return fail("--ctx values must be >= " + std::to_string(4 * kDecodeTokens));
  }
  for (int b : batch_list) {
    if (b < 1) return fail("--batch values must be >= 1");
  }
  if (ctx_list.empty() || mode_list.empty() || batch_list.empty()) {
    return fail("--ctx, --modes and --batch need at least one value each");
  }
  if (one) return run_one(models[0], mode_list[0], ctx_list[0], batch_list[0]);

  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  nlohmann::json rows = nlohmann::json::array();
  if (!json) {
    std::printf("%-28s %5s %5s %4s | %7s %7s %7s %7s | %7s %8s %7s | %7s %7s %7s\n", "model", "ctx",
                "batch", "load", "load", "prefill", "decode", "release", "planned", "measured",
                "error", "weights", "kv", "compute");
    std::printf("%-28s %5s %5s %4s | %7s %7s %7s %7s | %7s %8s %7s | %7s %7s %7s\n", "", "", "", "",
                "MiB", "MiB", "MiB", "MiB", "MiB", "MiB", "", "MiB", "MiB", "MiB");
  }
  double worst = 0;
  for (const auto& model : models) {
    for (int ctx : ctx_list) {
      for (int batch : batch_list) {
        edgellm::PlanOptions po;
        po.n_ctx = ctx;
        po.n_batch = batch;
        po.ram_bytes = 8ull << 30;
        auto plan = edgellm::plan_memory(model, po);
        if (!plan.ok()) return fail(model + ": " + plan.status().ToString());
        for (const auto& mode : mode_list) {
          std::fprintf(stderr, "[membench] %s ctx %d batch %d %s ...\n", model.c_str(), ctx, batch,
                       mode.c_str());
          nlohmann::json r;
          if (!run_child(self, model, mode, ctx, batch, &r)) {
            return fail("the child for " + model + " ctx " + std::to_string(ctx) + " failed");
          }
          const double base = r["baseline"].get<double>();
          const double peak = std::max({r["load_peak"].get<double>(),
                                        r["prefill_peak"].get<double>(),
                                        r["decode_peak"].get<double>()});
          const double measured = peak - base;
          const double planned = static_cast<double>(plan->total_bytes);
          const double err = (planned - measured) / measured;
          worst = std::max(worst, std::fabs(err));
          r["model"] = std::filesystem::path(model).filename().string();
          r["mode"] = mode;
          r["n_ctx"] = ctx;
          r["n_batch"] = batch;
          r["planned"] = plan->total_bytes;
          r["plan_weights"] = plan->weights_bytes;
          r["plan_kv"] = plan->kv_bytes;
          r["plan_compute"] = plan->compute_bytes;
          r["plan_overhead"] = plan->overhead_bytes;
          r["formula"] = plan->formula_bytes;
          r["measured"] = measured;
          r["error"] = err;
          rows.push_back(r);
          if (!json) {
            std::printf(
                "%-28s %5d %5d %4s | %7.0f %7.0f %7.0f %7.0f | %7.0f %8.0f %+6.1f%% | %7.0f %7.0f "
                "%7.0f\n",
                r["model"].get<std::string>().c_str(), ctx, batch, mode.c_str(),
                (r["load_peak"].get<double>() - base) / kMiB,
                (r["prefill_peak"].get<double>() - base) / kMiB,
                (r["decode_peak"].get<double>() - base) / kMiB,
                (r["released"].get<double>() - base) / kMiB, planned / kMiB, measured / kMiB,
                err * 100, plan->weights_bytes / kMiB, plan->kv_bytes / kMiB,
                plan->compute_bytes / kMiB);
            std::fflush(stdout);
          }
        }
      }
    }
  }
  if (json) {
    std::printf("%s\n", nlohmann::json{{"rows", rows}, {"worst_abs_error", worst}}.dump(2).c_str());
  } else {
    std::printf("phase columns: peak RSS minus the process baseline; measured = the largest of them;\n"
                "error = (planned - measured) / measured. Worst |error|: %.1f%%\n", worst * 100);
  }
  return 0;
}
