// Task advice and the device-tier table (plan_tiers).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "edgellm/planner.h"
#include "edgellm/synth.h"

namespace edgellm {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Parameter counts with no synth preset: formula rows only.
constexpr double kFormulaOnlyParamsB[] = {2.0, 4.0, 8.0};

}  // namespace

const char* task_name(Task task) {
  switch (task) {
    case Task::kChat: return "chat";
    case Task::kSummarize: return "summarize";
    case Task::kIntent: return "intent";
    case Task::kCode: return "code";
    case Task::kMath: return "math";
  }
  return "chat";
}

Result<Task> task_from_name(const std::string& name) {
  std::string n = name;
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  for (Task t : {Task::kChat, Task::kSummarize, Task::kIntent, Task::kCode, Task::kMath}) {
    if (n == task_name(t)) return t;
  }
  return Status::InvalidArgument("unknown task '" + name +
                                 "': use chat, summarize, intent, code or math");
}

QuantAdvice quant_for_task(Task task) {
  switch (task) {
    case Task::kCode:
    case Task::kMath:
      return {"Q8_0", std::string(task_name(task)) +
                          " needs exact tokens and multi-step reasoning, where 4-bit weights lose "
                          "the most accuracy: use 8-bit (Q8_0) and a smaller model if needed"};
    case Task::kChat:
    case Task::kSummarize:
    case Task::kIntent:
      break;
  }
  return {"Q4_K_M", std::string(task_name(task)) +
                        " tolerates 4-bit weights well: Q4_K_M halves memory against Q8_0, so a "
                        "larger model fits the same budget"};
}

Result<std::vector<TierRow>> plan_tiers(const TierOptions& o) {
  if (o.ram_gib.empty()) return Status::InvalidArgument("no device tiers given");
  for (double g : o.ram_gib) {
    if (!(g > 0 && g <= 1024)) {
      return Status::InvalidArgument("device RAM must be between 0 and 1024 GiB per tier");
    }
  }
  if (o.quants.empty()) return Status::InvalidArgument("no quantization types given");
  for (const auto& q : o.quants) {
    if (nominal_bits(q) <= 0) {
      return Status::InvalidArgument("unknown quantization '" + q + "': use e.g. Q4_K_M, Q8_0, F16");
    }
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path base = o.scratch_dir.empty() ? fs::temp_directory_path(ec) : fs::path(o.scratch_dir);
  const fs::path dir = base / ("edgellm-tiers." + std::to_string(::getpid()));
  fs::create_directories(dir, ec);
  if (ec) {
    return Status::Unavailable("cannot create the scratch folder " + dir.string() + ": " +
                               ec.message());
  }
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code e;
      fs::remove_all(d, e);
    }
  } cleanup{dir};

  auto fits = [&](uint64_t bytes) {
    std::vector<bool> v;
    for (double g : o.ram_gib) v.push_back(bytes <= static_cast<uint64_t>(g * kGiB * o.budget_fraction));
    return v;
  };

  std::vector<TierRow> rows;
  for (const SynthPreset& p : synth_presets()) {
    if (p.name == "tiny" || p.arch != "qwen2") continue;  // chat models only
    for (const auto& q : o.quants) {
      SynthOptions so;
      so.preset = p.name;
      so.type = q;
      so.header_only = true;
      so.vocab_path = o.vocab_path;
      so.output = (dir / (p.name + "-" + q + ".gguf")).string();
      EDGELLM_RETURN_IF_ERROR(synth_model(so));
      PlanOptions po;
      po.n_ctx = o.n_ctx;
      po.n_batch = o.n_batch;
      po.kv_type = o.kv_type;
      po.ram_bytes = static_cast<uint64_t>(o.ram_gib.front() * kGiB);
      po.budget_fraction = o.budget_fraction;
      auto plan = plan_memory(so.output, po);
      std::remove(so.output.c_str());
      if (!plan.ok()) return plan.status();
      TierRow r;
      r.model = p.name;
      r.params_b = plan->n_params / 1e9;
      r.quant = q;
      r.formula_bytes = plan->formula_bytes;
      r.exact_bytes = plan->total_bytes;
      r.fits_formula = fits(r.formula_bytes);
      r.fits_exact = fits(r.exact_bytes);
      rows.push_back(std::move(r));
    }
  }
  for (double b : kFormulaOnlyParamsB) {
    for (const auto& q : o.quants) {
      TierRow r;
      char name[16];
      std::snprintf(name, sizeof(name), "%gB", b);
      r.model = name;
      r.params_b = b;
      r.quant = q;
      r.formula_bytes = formula_bytes(static_cast<uint64_t>(b * 1e9), nominal_bits(q));
      r.fits_formula = fits(r.formula_bytes);
      r.fits_exact.assign(o.ram_gib.size(), false);
      rows.push_back(std::move(r));
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TierRow& a, const TierRow& b) {
    return a.params_b < b.params_b;
  });
  return rows;
}

}  // namespace edgellm
