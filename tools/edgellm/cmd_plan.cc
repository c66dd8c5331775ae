// edgellm plan MODEL [--ram 8G] [--ctx N] [--kv-type q8_0] [--json]: memory before loading.
#include <cstdio>

#include "common.h"
#include "edgellm/planner.h"

namespace cli {

Action add_plan(CLI::App& app) {
  static std::string path, ram, kv = "f16";
  static edgellm::PlanOptions o;
  static bool json = false;
  auto* cmd = app.add_subcommand("plan", "Plan a model's memory on a device (no weights loaded)");
  cmd->add_option("model", path, "GGUF model file")->required();
  cmd->add_option("--ram", ram, "Device RAM, e.g. 6G, 8GB, 12GiB (default: this machine)");
  cmd->add_option("--ctx", o.n_ctx, "Context length (default min(train ctx, 2048))");
  cmd->add_option("--batch", o.n_batch, "Prefill chunk (default 512)");
  cmd->add_option("--kv-type", kv, "KV cache type: f16 (default), q8_0, q4_0");
  cmd->add_option("--budget", o.budget_fraction, "Share of RAM the app may use (default 0.4)");
  cmd->add_flag("--json", json, "Print one JSON object");
  return [] {
    if (!ram.empty()) {
      auto bytes = parse_size(ram);
      if (!bytes.ok()) return fail(bytes.status());
      o.ram_bytes = *bytes;
    }
    auto kvt = edgellm::kv_type_from_name(kv);
    if (!kvt.ok()) return fail(kvt.status());
    o.kv_type = *kvt;
    auto p = edgellm::plan_memory(path, o);
    if (!p.ok()) return fail(p.status());
    if (json) {
      nlohmann::json j = {{"model", path},
                          {"n_ctx", p->n_ctx},
                          {"n_batch", p->n_batch},
                          {"kv_type", edgellm::kv_type_name(p->kv_type)},
                          {"ram_bytes", p->ram_bytes},
                          {"budget_bytes", p->budget_bytes},
                          {"n_params", p->n_params},
                          {"formula_bits", p->formula_bits},
                          {"formula_bytes", p->formula_bytes},
                          {"weights_bytes", p->weights_bytes},
                          {"kv_bytes", p->kv_bytes},
                          {"compute_bytes", p->compute_bytes},
                          {"overhead_bytes", p->overhead_bytes},
                          {"total_bytes", p->total_bytes},
                          {"fits", p->fits},
                          {"max_ctx_that_fits", p->max_ctx_that_fits},
                          {"advice", p->advice}};
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    std::printf("model %s: %.3f B params\n", path.c_str(), p->n_params / 1e9);
    std::printf("device RAM %s, budget %s (%.0f%%)\n", human_bytes(p->ram_bytes).c_str(),
                human_bytes(p->budget_bytes).c_str(), o.budget_fraction * 100);
    std::printf("seed formula (params x %.0f bits / 8 x 1.2)  %s\n", p->formula_bits,
                human_bytes(p->formula_bytes).c_str());
    std::printf("exact plan at n_ctx %d, n_batch %d, KV %s:\n", p->n_ctx, p->n_batch,
                edgellm::kv_type_name(p->kv_type));
    std::printf("  weights   %12s\n", human_bytes(p->weights_bytes).c_str());
    std::printf("  KV cache  %12s\n", human_bytes(p->kv_bytes).c_str());
    std::printf("  compute   %12s  (libllama dry run)\n", human_bytes(p->compute_bytes).c_str());
    std::printf("  overhead  %12s\n", human_bytes(p->overhead_bytes).c_str());
    std::printf("  total     %12s\n", human_bytes(p->total_bytes).c_str());
    std::printf("verdict: %s; largest context within budget: %d\n",
                p->fits ? "fits" : "does NOT fit", p->max_ctx_that_fits);
    if (!p->advice.empty()) std::printf("advice: %s\n", p->advice.c_str());
    return 0;
  };
}

}  // namespace cli
