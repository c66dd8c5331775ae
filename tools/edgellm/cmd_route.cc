// edgellm caps [--whitelist F] [--root DIR] [--json]: backends, devices, CPU features and the
// whitelist's verdict on this platform.
// edgellm route -m MODEL [--private] [--offline] [--latency-ms N] [--cloud URL]
//               [--prefer-device] [--ram 8G] [--whitelist F] [--root DIR] [--json]:
// where a request for MODEL would run (on-device, cloud, refuse) and why.
#include <cstdio>
#include <filesystem>

#include "common.h"
#include "edgellm/device.h"
#include "edgellm/planner.h"
#include "edgellm/policy.h"

namespace cli {
namespace {

struct PlatformArgs {
  std::string whitelist, root;
  bool json = false;
};

void add_platform_flags(CLI::App* c, PlatformArgs* a) {
  c->add_option("--whitelist", a->whitelist,
                "platform whitelist JSON (schema edgellm.whitelist v1; default: the built-in one)");
  c->add_option("--root", a->root, "read /proc, /sys and /etc under DIR (a device fixture tree)");
  c->add_flag("--json", a->json, "machine-readable output");
}

struct Platform {
  edgellm::Capabilities caps;
  edgellm::DeviceProfile device;
  std::string os;
  edgellm::PlatformVerdict verdict;
};

edgellm::Result<Platform> read_platform(const PlatformArgs& a) {
  Platform p;
  edgellm::Whitelist wl = edgellm::builtin_whitelist();
  if (!a.whitelist.empty()) {
    auto w = edgellm::load_whitelist(a.whitelist);
    if (!w.ok()) return w.status();
    wl = *w;
  }
  edgellm::DeviceOptions o;
  o.root = a.root;
  auto dev = edgellm::read_device_profile(o);
  if (!dev.ok()) return dev.status();
  p.device = *dev;
  p.caps = edgellm::read_capabilities();
  p.os = edgellm::read_os_name(a.root);
  p.verdict = edgellm::match_platform(wl, p.device, p.os, p.caps);
  return p;
}

nlohmann::json verdict_json(const Platform& p) {
  return {{"whitelisted", p.verdict.whitelisted}, {"rule", p.verdict.rule_id},
          {"backend", p.verdict.backend},         {"max_params_b", p.verdict.max_params_b},
          {"max_model_bytes", p.verdict.max_model_bytes}, {"reason", p.verdict.reason}};
}

int run_caps(const PlatformArgs& a) {
  auto p = read_platform(a);
  if (!p.ok()) return fail(p.status());
  if (a.json) {
    nlohmann::json j;
    j["backends"] = p->caps.backends;
    j["devices"] = nlohmann::json::array();
    for (const auto& d : p->caps.devices) {
      j["devices"].push_back({{"name", d.name},
                              {"description", d.description},
                              {"type", d.type},
                              {"memory_total_bytes", d.memory_total_bytes},
                              {"memory_free_bytes", d.memory_free_bytes}});
    }
    j["cpu_features"] = p->caps.cpu_features;
    j["platform"] = {{"soc", p->device.soc_model},
                     {"cpu", p->device.platform},
                     {"os", p->os},
                     {"ram_bytes", p->device.total_ram_bytes}};
    j["verdict"] = verdict_json(*p);
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::string backends, features;
  for (const auto& b : p->caps.backends) backends += (backends.empty() ? "" : ", ") + b;
  for (const auto& f : p->caps.cpu_features) features += (features.empty() ? "" : " ") + f;
  std::printf("backends:     %s\n", backends.c_str());
  for (const auto& d : p->caps.devices) {
    std::printf("device:       %s (%s): %s, %s total\n", d.name.c_str(), d.type.c_str(),
                d.description.c_str(), human_bytes(d.memory_total_bytes).c_str());
  }
  std::printf("cpu features: %s\n", features.c_str());
  std::printf("platform:     %s | %s | %s | %s RAM\n",
              p->device.soc_model.empty() ? "-" : p->device.soc_model.c_str(),
              p->device.platform.c_str(), p->os.c_str(),
              human_bytes(p->device.total_ram_bytes).c_str());
  std::printf("verdict:      %s\n", p->verdict.reason.c_str());
  if (p->verdict.max_params_b > 0) {
    std::printf("              models up to %.3gB parameters\n", p->verdict.max_params_b);
  }
  return 0;
}

struct RouteArgs {
  PlatformArgs platform;
  std::string model, cloud, ram;
  edgellm::PolicyInputs in;
};

int run_route(RouteArgs& a) {
  auto p = read_platform(a.platform);
  if (!p.ok()) return fail(p.status());
  edgellm::PolicyInputs in = a.in;
  in.cloud_configured = !a.cloud.empty();
  nlohmann::json plan_j;
  std::error_code ec;
  if (!std::filesystem::exists(a.model, ec)) {
    in.model_state = edgellm::ModelState::kMissing;
  } else {
    edgellm::PlanOptions po;
    if (!a.ram.empty()) {
      auto r = parse_size(a.ram);
      if (!r.ok()) return fail(r.status());
      po.ram_bytes = *r;
    } else {
      po.ram_bytes = p->device.total_ram_bytes;
    }
    auto plan = edgellm::plan_memory(a.model, po);
    if (!plan.ok()) return fail(plan.status());
    const uint64_t file_bytes = std::filesystem::file_size(a.model, ec);
    in.platform_allowed = edgellm::model_allowed(p->verdict, plan->n_params / 1e9, file_bytes,
                                                 &in.platform_why);
    in.fits = plan->fits;
    if (!plan->fits) {
      in.fit_why = !plan->advice.empty()
                       ? "memory plan: " + plan->advice
                       : "the memory plan needs " + human_bytes(plan->total_bytes) +
                             ", the budget is " + human_bytes(plan->budget_bytes);
    }
    plan_j = {{"fits", plan->fits},
              {"total_bytes", plan->total_bytes},
              {"budget_bytes", plan->budget_bytes},
              {"n_params", plan->n_params}};
  }
  const edgellm::PolicyDecision d = edgellm::decide(in);
  if (a.platform.json) {
    nlohmann::json j;
    j["route"] = edgellm::route_name(d.route);
    j["reason"] = d.reason;
    j["local_possible"] = d.local_possible;
    j["local_why"] = d.local_why;
    j["platform"] = verdict_json(*p);
    j["plan"] = plan_j;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s: %s\n", edgellm::route_name(d.route), d.reason.c_str());
  }
  return d.route == edgellm::Route::kRefuse ? 3 : 0;
}

}  // namespace

Action add_caps(CLI::App& app) {
  auto* a = new PlatformArgs();
  CLI::App* c = app.add_subcommand(
      "caps", "what this build and device can run: backends, CPU features, whitelist verdict");
  add_platform_flags(c, a);
  return [a] { return run_caps(*a); };
}

Action add_route(CLI::App& app) {
  auto* a = new RouteArgs();
  CLI::App* c = app.add_subcommand(
      "route", "where a request would run (on-device, cloud or refuse) and why; exit 3 on refuse");
  c->add_option("-m,--model", a->model, "the model the device would run (GGUF)")->required();
  c->add_flag("--private", a->in.privacy_required, "the data may not leave the device");
  c->add_flag("--offline", a->in.offline, "no network");
  c->add_option("--latency-ms", a->in.latency_target_ms, "first-token target, ms")
      ->check(CLI::Range(0.0, 1e7));
  c->add_option("--cloud-ttft-ms", a->in.cloud_ttft_ms,
                "the cloud's best first-token time, ms (default 200, the seed's round trip)")
      ->check(CLI::Range(0.0, 1e7));
  c->add_option("--cloud", a->cloud, "cloud endpoint (OpenAI-compatible base URL)");
  c->add_flag("--prefer-device", a->in.prefer_on_device,
              "use the device whenever it can (default: only when privacy, offline or latency "
              "demands it)");
  c->add_option("--ram", a->ram, "plan for this much RAM (e.g. 6G; default: this device's)");
  add_platform_flags(c, &a->platform);
  return [a] { return run_route(*a); };
}

}  // namespace cli
