// edgellm eval MODEL [--tasks intent,extract,math,code] [--items N] [--reference F32.gguf]
// [--json]: accuracy per task on held-out items of edgellm's corpus, perplexity, and the KL
// divergence from a reference model.
#include <cstdio>
#include <sstream>

#include "common.h"
#include "edgellm/eval.h"

namespace cli {

Action add_eval(CLI::App& app) {
  static edgellm::EvalOptions o;
  static std::string tasks = "intent,extract,math,code";
  static bool json = false;
  auto* cmd = app.add_subcommand(
      "eval", "Accuracy per task on held-out items, perplexity, KL divergence from a reference");
  cmd->add_option("model", o.model, "GGUF model (edgellm's trained model or a quantization of it)")
      ->required();
  cmd->add_option("--tasks", tasks, "Comma-separated: intent, extract, math, code, chat, and the copying tasks "
                               "rewrite, record (docs/training.md)");
  cmd->add_option("--items", o.items, "Held-out items per task (default 200)");
  cmd->add_option("--reference", o.reference, "Full-precision model for the KL divergence");
  cmd->add_option("--seed", o.seed, "Which held-out items (default 7)");
  cmd->add_option("--threads", o.n_threads, "Threads (default: physical cores)");
  cmd->add_flag("--json", json, "Print one JSON object");
  return [] {
    o.tasks.clear();
    std::stringstream ss(tasks);
    for (std::string t; std::getline(ss, t, ',');) {
      if (!t.empty()) o.tasks.push_back(t);
    }
    if (!json) {
      o.on_progress = [](const std::string& task, int32_t done, int32_t total) {
        progress_line(("eval " + task).c_str(), static_cast<float>(done) / total, done == total);
        return true;
      };
    }
    auto r = edgellm::evaluate_model(o);
    if (!r.ok()) return fail(r.status());
    nlohmann::json j = {{"model", o.model},
                        {"items_per_task", o.items},
                        {"perplexity", r->perplexity},
                        {"n_tokens", r->n_tokens},
                        {"seconds", r->seconds}};
    if (!o.reference.empty()) {
      j["reference"] = o.reference;
      j["kl_mean"] = r->kl_mean;
      j["kl_p99"] = r->kl_p99;
      j["top1_agree"] = r->top1_agree;
    }
    j["tasks"] = nlohmann::json::object();
    for (const auto& t : r->tasks) {
      j["tasks"][t.task] = {{"accuracy", t.accuracy}, {"correct", t.correct}, {"n", t.n},
                            {"chance", t.chance}, {"examples", t.examples}};
    }
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("%-8s %9s %8s %8s\n", "task", "accuracy", "correct", "chance");
    for (const auto& t : r->tasks) {
      std::printf("%-8s %8.1f%% %4d/%-4d %7.1f%%\n", t.task.c_str(), 100 * t.accuracy, t.correct,
                  t.n, 100 * t.chance);
    }
    std::printf("perplexity %.3f over %lld held-out tokens\n", r->perplexity,
                static_cast<long long>(r->n_tokens));
    if (!o.reference.empty()) {
      std::printf("KL(reference || model) mean %.5f, p99 %.5f; top-1 agreement %.1f%%\n",
                  r->kl_mean, r->kl_p99, 100 * r->top1_agree);
    }
    for (const auto& t : r->tasks) {
      for (const auto& e : t.examples) std::printf("  [%s] %s\n", t.task.c_str(), e.c_str());
    }
    return 0;
  };
}

}  // namespace cli
