// edgellm plan MODEL [--ram 8G] [--ctx N] [--kv-type q8_0] [--task code] [--json]
// edgellm plan --tiers [--task chat] [--ctx N] [--json]: memory before loading.
#include <algorithm>
#include <cstdio>
#include <optional>

#include "common.h"
#include "edgellm/planner.h"

namespace cli {
namespace {

struct PlanArgs {
  std::string path, ram, kv = "f16", task, tier_ram = "6,8,12";
  edgellm::PlanOptions o;
  bool json = false, tiers = false;
};

std::vector<double> parse_gib_list(const std::string& text, edgellm::Status* st) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    auto bytes = parse_size(item.find_first_not_of("0123456789.") == std::string::npos ? item + "G" : item);
    if (!bytes.ok()) {
      *st = bytes.status();
      return {};
    }
    out.push_back(*bytes / (1024.0 * 1024.0 * 1024.0));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

int run_tiers(const PlanArgs& a) {
  edgellm::TierOptions t;
  edgellm::Status st;
  t.ram_gib = parse_gib_list(a.tier_ram, &st);
  if (!st.ok()) return fail(st);
  if (a.o.n_ctx > 0) t.n_ctx = a.o.n_ctx;
  t.n_batch = a.o.n_batch;
  t.budget_fraction = a.o.budget_fraction;
  auto kvt = edgellm::kv_type_from_name(a.kv);
  if (!kvt.ok()) return fail(kvt.status());
  t.kv_type = *kvt;
  t.vocab_path = default_vocab();
  std::optional<edgellm::Task> task;
  if (!a.task.empty()) {
    auto tk = edgellm::task_from_name(a.task);
    if (!tk.ok()) return fail(tk.status());
    task = *tk;
  }
  if (!a.json) std::fprintf(stderr, "[tiers] planning header-only GGUFs of every preset ...\n");
  auto rows = edgellm::plan_tiers(t);
  if (!rows.ok()) return fail(rows.status());

  // Per tier: the largest model whose exact plan fits at the task's quantization.
  std::vector<std::string> best(t.ram_gib.size());
  std::string task_quant;
  if (task) {
    task_quant = edgellm::quant_for_task(*task).quant;
    for (size_t i = 0; i < t.ram_gib.size(); ++i) {
      for (const auto& r : *rows) {
        if (r.quant == task_quant && r.exact_bytes > 0 && r.fits_exact[i]) best[i] = r.model;
      }
    }
  }
  if (a.json) {
    nlohmann::json j;
    j["n_ctx"] = t.n_ctx;
    j["kv_type"] = edgellm::kv_type_name(t.kv_type);
    j["budget_fraction"] = t.budget_fraction;
    j["ram_gib"] = t.ram_gib;
    j["rows"] = nlohmann::json::array();
    for (const auto& r : *rows) {
      j["rows"].push_back({{"model", r.model},
                           {"params_b", r.params_b},
                           {"quant", r.quant},
                           {"formula_bytes", r.formula_bytes},
                           {"exact_bytes", r.exact_bytes},
                           {"fits_formula", r.fits_formula},
                           {"fits_exact", r.fits_exact}});
    }
    if (task) {
      const auto adv = edgellm::quant_for_task(*task);
      j["task"] = {{"name", edgellm::task_name(*task)},
                   {"quant", adv.quant},
                   {"reason", adv.reason},
                   {"best_per_tier", best}};
    }
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("device tiers: app budget %.0f%% of RAM; exact plans at n_ctx %d, KV %s\n",
              t.budget_fraction * 100, t.n_ctx, edgellm::kv_type_name(t.kv_type));
  int w = 14;  // the model column fits the longest preset name
  for (const auto& r : *rows) w = std::max(w, static_cast<int>(r.model.size()));
  std::printf("%-*s %6s %-7s %9s %9s", w, "model", "params", "quant", "formula", "exact");
  for (double g : t.ram_gib) std::printf("  %5.0fGB", g);
  std::printf("\n%-*s %6s %-7s %9s %9s", w, "", "", "", "GiB", "GiB");
  for (double g : t.ram_gib) std::printf("  %6.2f", g * t.budget_fraction);
  std::printf("   <- budget GiB\n");
  for (const auto& r : *rows) {
    std::printf("%-*s %5.2fB %-7s %9.2f ", w, r.model.c_str(), r.params_b, r.quant.c_str(),
                r.formula_bytes / (1024.0 * 1024 * 1024));
    if (r.exact_bytes) std::printf("%9.2f", r.exact_bytes / (1024.0 * 1024 * 1024));
    else std::printf("%9s", "-");
    for (size_t i = 0; i < t.ram_gib.size(); ++i) {
      // exact verdict where there is one, else the formula's (marked f)
      const bool ok = r.exact_bytes ? r.fits_exact[i] : r.fits_formula[i];
      std::printf("  %6s", (std::string(ok ? "fits" : "no") + (r.exact_bytes ? "" : " f")).c_str());
    }
    std::printf("\n");
  }
  std::printf("(\"f\": formula only, no preset of that size)\n");
  if (task) {
    const auto adv = edgellm::quant_for_task(*task);
    std::printf("task %s: %s (%s)\n", edgellm::task_name(*task), adv.quant.c_str(), adv.reason.c_str());
    for (size_t i = 0; i < t.ram_gib.size(); ++i) {
      std::printf("  %5.0f GB device: %s\n", t.ram_gib[i],
                  best[i].empty() ? ("no preset fits at " + task_quant + ": route to the cloud").c_str()
                                  : (best[i] + " " + task_quant).c_str());
    }
  }
  return 0;
}

}  // namespace

Action add_plan(CLI::App& app) {
  static PlanArgs a;
  auto* cmd = app.add_subcommand("plan", "Plan a model's memory on a device (no weights loaded)");
  cmd->add_option("model", a.path, "GGUF model file (not with --tiers)");
  cmd->add_option("--ram", a.ram, "Device RAM, e.g. 6G, 8GB, 12GiB (default: this machine)");
  cmd->add_option("--ctx", a.o.n_ctx, "Context length (default min(train ctx, 2048))");
  cmd->add_option("--batch", a.o.n_batch, "Prefill chunk (default 512)");
  cmd->add_option("--mmproj", a.o.mmproj_path,
                  "The model's projector (mmproj .gguf): plan its weights and encoder too");
  cmd->add_option("--draft", a.o.draft_path,
                  "A draft model for speculative decoding (--spec draft:FILE): plan its weights "
                  "and its own context too");
  cmd->add_option("--image-max-tokens", a.o.image_max_tokens,
                  "Tokens per image at most, as the projector will be loaded (default: its own)");
  cmd->add_option("--kv-type", a.kv, "KV cache type: f16 (default), q8_0, q4_0");
  cmd->add_option("--budget", a.o.budget_fraction, "Share of RAM the app may use (default 0.4)");
  cmd->add_option("--task", a.task, "chat, summarize, intent, code or math: advise a quantization");
  cmd->add_flag("--tiers", a.tiers, "The device-tier table for every synth preset and size");
  cmd->add_option("--tier-ram", a.tier_ram, "Tiers for --tiers, GB, comma-separated (default 6,8,12)");
  cmd->add_flag("--embedding", a.o.embedding,
                "Plan an embedding/rerank model's batches (--ctx: tokens per batch)");
  cmd->add_option("--embed-texts", a.o.embed_texts, "Texts per batch, with --embedding (default 64)");
  cmd->add_flag("--json", a.json, "Print one JSON object");
  return [] {
    if (a.tiers) {
      if (!a.path.empty()) {
        return fail(edgellm::Status::InvalidArgument("--tiers plans every preset: drop MODEL"));
      }
      return run_tiers(a);
    }
    if (a.path.empty()) {
      return fail(edgellm::Status::InvalidArgument("pass a MODEL .gguf, or --tiers for the tier table"));
    }
    edgellm::PlanOptions o = a.o;
    if (!a.ram.empty()) {
      auto bytes = parse_size(a.ram);
      if (!bytes.ok()) return fail(bytes.status());
      o.ram_bytes = *bytes;
    }
    auto kvt = edgellm::kv_type_from_name(a.kv);
    if (!kvt.ok()) return fail(kvt.status());
    o.kv_type = *kvt;
    std::optional<edgellm::QuantAdvice> advice;
    if (!a.task.empty()) {
      auto tk = edgellm::task_from_name(a.task);
      if (!tk.ok()) return fail(tk.status());
      advice = edgellm::quant_for_task(*tk);
    }
    auto p = edgellm::plan_memory(a.path, o);
    if (!p.ok()) return fail(p.status());
    // Same model at the advised quantization, by the formula (no such file exists yet).
    uint64_t advised_bytes = 0;
    if (advice) {
      advised_bytes = edgellm::formula_bytes(p->n_params, edgellm::nominal_bits(advice->quant));
    }
    if (a.json) {
      nlohmann::json j = {{"model", a.path},
                          {"n_ctx", p->n_ctx},
                          {"n_batch", p->n_batch},
                          {"kv_type", edgellm::kv_type_name(p->kv_type)},
                          {"ram_bytes", p->ram_bytes},
                          {"budget_bytes", p->budget_bytes},
                          {"n_params", p->n_params},
                          {"quant", p->quant},
                          {"formula_bits", p->formula_bits},
                          {"formula_bytes", p->formula_bytes},
                          {"weights_bytes", p->weights_bytes},
                          {"kv_bytes", p->kv_bytes},
                          {"compute_bytes", p->compute_bytes},
                          {"overhead_bytes", p->overhead_bytes},
                          {"outputs_bytes", p->outputs_bytes},
                          {"projector_bytes", p->projector_bytes},
                          {"draft_bytes", p->draft_bytes},
                          {"embedding", o.embedding},
                          {"total_bytes", p->total_bytes},
                          {"fits", p->fits},
                          {"max_ctx_that_fits", p->max_ctx_that_fits},
                          {"advice", p->advice}};
      if (advice) {
        j["task"] = {{"name", a.task},
                     {"quant", advice->quant},
                     {"reason", advice->reason},
                     {"model_matches", advice->quant == p->quant},
                     {"advised_formula_bytes", advised_bytes}};
      }
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("model %s: %.3f B params, %s\n", a.path.c_str(), p->n_params / 1e9, p->quant.c_str());
    std::printf("device RAM %s, budget %s (%.0f%%)\n", human_bytes(p->ram_bytes).c_str(),
                human_bytes(p->budget_bytes).c_str(), o.budget_fraction * 100);
    std::printf("seed formula (params x %.0f bits / 8 x 1.2)  %s\n", p->formula_bits,
                human_bytes(p->formula_bytes).c_str());
    if (o.embedding) {
      std::printf("exact plan for embedding batches of %d tokens, up to %d texts:\n", p->n_ctx,
                  o.embed_texts);
    } else {
      std::printf("exact plan at n_ctx %d, n_batch %d, KV %s:\n", p->n_ctx, p->n_batch,
                  edgellm::kv_type_name(p->kv_type));
    }
    std::printf("  weights   %12s\n", human_bytes(p->weights_bytes).c_str());
    std::printf("  KV cache  %12s\n", human_bytes(p->kv_bytes).c_str());
    std::printf("  compute   %12s  (libllama dry run)\n", human_bytes(p->compute_bytes).c_str());
    std::printf("  overhead  %12s  (runtime, vocabulary; calibrated)\n",
                human_bytes(p->overhead_bytes).c_str());
    if (o.embedding) {
      std::printf("  outputs   %12s  (llama.cpp's output rows for every token of a batch)\n",
                  human_bytes(p->outputs_bytes).c_str());
    }
    if (p->projector_bytes > 0) {
      std::printf("  projector %12s  (weights + encoder compute, mtmd dry run)\n",
                  human_bytes(p->projector_bytes).c_str());
    }
    if (p->draft_bytes > 0) {
      std::printf("  draft     %12s  (draft model: weights, its KV cache and compute)\n",
                  human_bytes(p->draft_bytes).c_str());
    }
    std::printf("  total     %12s\n", human_bytes(p->total_bytes).c_str());
    std::printf("verdict: %s; largest context within budget: %d\n",
                p->fits ? "fits" : "does NOT fit", p->max_ctx_that_fits);
    if (!p->advice.empty()) std::printf("advice: %s\n", p->advice.c_str());
    if (advice) {
      std::printf("task %s: %s advised (%s)", a.task.c_str(), advice->quant.c_str(),
                  advice->reason.c_str());
      if (advice->quant == p->quant) {
        std::printf("; this model already is %s\n", p->quant.c_str());
      } else {
        std::printf("; this model is %s: the same model at %s needs about %s by the formula\n",
                    p->quant.c_str(), advice->quant.c_str(), human_bytes(advised_bytes).c_str());
      }
    }
    return 0;
  };
}

}  // namespace cli
