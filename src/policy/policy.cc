// Whitelist parsing and matching, and the scenario policy (pure functions).
#include "edgellm/policy.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace edgellm {
namespace {

using json = nlohmann::json;

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

bool icontains(const std::string& hay, const std::string& needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}

std::string gib(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.3g GiB", v);
  return b;
}

std::string bytes_text(uint64_t v) { return gib(static_cast<double>(v) / (1ull << 30)); }

// Reads an optional number field >= 0. False with *err set when present and not that.
bool opt_number(const json& o, const char* key, const std::string& where, double* out,
                std::string* err) {
  if (!o.contains(key)) return true;
  const json& v = o.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    *err = where + "." + key + " must be a number >= 0";
    return false;
  }
  *out = v.get<double>();
  return true;
}

bool opt_strings(const json& o, const char* key, const std::string& where,
                 std::vector<std::string>* out, std::string* err) {
  if (!o.contains(key)) return true;
  const json& v = o.at(key);
  if (v.is_string()) {
    out->push_back(v.get<std::string>());
    return true;
  }
  if (!v.is_array()) {
    *err = where + "." + key + " must be a string or an array of strings";
    return false;
  }
  for (const json& s : v) {
    if (!s.is_string() || s.get<std::string>().empty()) {
      *err = where + "." + key + " must hold non-empty strings";
      return false;
    }
    out->push_back(s.get<std::string>());
  }
  return true;
}

constexpr const char* kBuiltin = R"({
  "schema": "edgellm.whitelist",
  "version": 1,
  "platforms": [
    {"id": "harmonyos-flagship", "os": ["HarmonyOS", "OpenHarmony"], "ram_gib": [12, 0],
     "backend": "CPU", "max_params_b": 8},
    {"id": "harmonyos-midrange", "os": ["HarmonyOS", "OpenHarmony"], "ram_gib": [6, 12],
     "backend": "CPU", "max_params_b": 2}
  ],
  "default": {"max_params_b": 2}
})";

}  // namespace

const char* route_name(Route route) {
  switch (route) {
    case Route::kOnDevice: return "on-device";
    case Route::kCloud: return "cloud";
    case Route::kRefuse: return "refuse";
  }
  return "refuse";
}

Result<Whitelist> parse_whitelist(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Status::InvalidArgument("whitelist: not a JSON object");
  }
  if (!doc.contains("schema") || doc["schema"] != "edgellm.whitelist") {
    return Status::InvalidArgument("whitelist: \"schema\" must be \"edgellm.whitelist\"");
  }
  if (!doc.contains("version") || !doc["version"].is_number_integer()) {
    return Status::InvalidArgument("whitelist: \"version\" must be an integer");
  }
  Whitelist w;
  w.version = doc["version"].get<int>();
  if (w.version != 1) {
    return Status::InvalidArgument("whitelist: version " + std::to_string(w.version) +
                                   " is not supported by this build (it reads version 1)");
  }
  if (!doc.contains("platforms") || !doc["platforms"].is_array()) {
    return Status::InvalidArgument("whitelist: \"platforms\" must be an array");
  }
  std::string err;
  for (size_t i = 0; i < doc["platforms"].size(); ++i) {
    const json& p = doc["platforms"][i];
    const std::string where = "whitelist: platforms[" + std::to_string(i) + "]";
    if (!p.is_object()) return Status::InvalidArgument(where + " must be an object");
    PlatformRule r;
    if (!p.contains("id") || !p["id"].is_string() || p["id"].get<std::string>().empty()) {
      return Status::InvalidArgument(where + ".id must be a non-empty string");
    }
    r.id = p["id"].get<std::string>();
    if (!opt_strings(p, "soc", where, &r.soc, &err) || !opt_strings(p, "os", where, &r.os, &err)) {
      return Status::InvalidArgument(err);
    }
    if (r.soc.empty() && r.os.empty()) {
      return Status::InvalidArgument(where + " must name a \"soc\" or an \"os\"");
    }
    if (p.contains("ram_gib")) {
      const json& ram = p["ram_gib"];
      if (!ram.is_array() || ram.size() != 2 || !ram[0].is_number() || !ram[1].is_number() ||
          ram[0].get<double>() < 0 || ram[1].get<double>() < 0 ||
          (ram[1].get<double>() > 0 && ram[1].get<double>() <= ram[0].get<double>())) {
        return Status::InvalidArgument(where +
                                       ".ram_gib must be [min, max] GiB with max > min, or "
                                       "max 0 for no upper bound");
      }
      r.min_ram_gib = ram[0].get<double>();
      r.max_ram_gib = ram[1].get<double>();
    }
    if (p.contains("backend")) {
      if (!p["backend"].is_string() || p["backend"].get<std::string>().empty()) {
        return Status::InvalidArgument(where + ".backend must be a backend name such as \"CPU\"");
      }
      r.backend = p["backend"].get<std::string>();
    }
    double max_bytes = 0;
    if (!opt_number(p, "max_params_b", where, &r.max_params_b, &err) ||
        !opt_number(p, "max_model_bytes", where, &max_bytes, &err)) {
      return Status::InvalidArgument(err);
    }
    r.max_model_bytes = static_cast<uint64_t>(max_bytes);
    for (const PlatformRule& other : w.platforms) {
      if (other.id == r.id) return Status::InvalidArgument(where + ".id \"" + r.id + "\" repeats");
    }
    w.platforms.push_back(std::move(r));
  }
  if (doc.contains("default")) {
    const json& d = doc["default"];
    if (!d.is_object()) return Status::InvalidArgument("whitelist: \"default\" must be an object");
    double max_bytes = 0;
    if (!opt_number(d, "max_params_b", "whitelist: default", &w.default_max_params_b, &err) ||
        !opt_number(d, "max_model_bytes", "whitelist: default", &max_bytes, &err)) {
      return Status::InvalidArgument(err);
    }
    w.default_max_model_bytes = static_cast<uint64_t>(max_bytes);
  }
  return w;
}

Result<Whitelist> load_whitelist(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("whitelist " + path + " cannot be opened");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::Unavailable("whitelist " + path + " cannot be read");
  auto w = parse_whitelist(ss.str());
  if (!w.ok()) return Status::InvalidArgument(path + ": " + w.status().message());
  return w;
}

const Whitelist& builtin_whitelist() {
  static const Whitelist w = [] {
    auto r = parse_whitelist(kBuiltin);
    return r.ok() ? *r : Whitelist{};
  }();
  return w;
}

PlatformVerdict match_platform(const Whitelist& whitelist, const DeviceProfile& device,
                               const std::string& os_name, const Capabilities& caps) {
  const double ram_gib = static_cast<double>(device.total_ram_bytes) / (1ull << 30);
  const std::string soc = device.soc_model.empty() ? device.platform
                                                   : device.soc_model + " / " + device.platform;
  PlatformVerdict v;
  std::string near;
  for (const PlatformRule& r : whitelist.platforms) {
    const bool soc_ok = r.soc.empty() || std::any_of(r.soc.begin(), r.soc.end(), [&](auto& s) {
                          return icontains(soc, s);
                        });
    const bool os_ok = r.os.empty() || std::any_of(r.os.begin(), r.os.end(), [&](auto& s) {
                         return icontains(os_name, s);
                       });
    if (!soc_ok || !os_ok) continue;
    if (ram_gib < r.min_ram_gib || (r.max_ram_gib > 0 && ram_gib >= r.max_ram_gib)) {
      if (near.empty()) {
        near = "; rule " + r.id + " matches the platform but not its " + gib(ram_gib) + " of RAM";
      }
      continue;
    }
    v.whitelisted = true;
    v.rule_id = r.id;
    v.max_params_b = r.max_params_b;
    v.max_model_bytes = r.max_model_bytes;
    if (caps.has_backend(r.backend)) {
      v.backend = r.backend;
      v.reason = "whitelisted by rule " + r.id + ": backend " + r.backend;
    } else {
      v.backend = "CPU";
      v.reason = "whitelisted by rule " + r.id + ", whose backend " + r.backend +
                 " is not in this build: using the CPU";
    }
    return v;
  }
  v.max_params_b = whitelist.default_max_params_b;
  v.max_model_bytes = whitelist.default_max_model_bytes;
  v.reason = "platform \"" + soc + "\" on \"" + os_name + "\" is not whitelisted" + near +
             ": the safe CPU path";
  return v;
}

bool model_allowed(const PlatformVerdict& verdict, double params_b, uint64_t file_bytes,
                   std::string* why) {
  char b[160];
  const std::string who = verdict.whitelisted ? "rule " + verdict.rule_id : "the safe CPU path";
  if (verdict.max_params_b > 0 && params_b > verdict.max_params_b) {
    std::snprintf(b, sizeof(b), "%.2fB parameters is more than the %.3gB that %s allows",
                  params_b, verdict.max_params_b, who.c_str());
    if (why) *why = b;
    return false;
  }
  if (verdict.max_model_bytes > 0 && file_bytes > verdict.max_model_bytes) {
    if (why) {
      *why = "a " + bytes_text(file_bytes) + " model file is more than the " +
             bytes_text(verdict.max_model_bytes) + " that " + who + " allows";
    }
    return false;
  }
  if (why) why->clear();
  return true;
}

PolicyDecision decide(const PolicyInputs& in) {
  PolicyDecision d;
  // Can the device run it at all?
  if (in.model_state == ModelState::kMissing) {
    d.local_why = "the model is not on the device";
  } else if (in.model_state == ModelState::kDownloading) {
    char b[64];
    std::snprintf(b, sizeof(b), "the model is still downloading (%.0f%%)",
                  100.0 * std::clamp(in.download_fraction, 0.0, 1.0));
    d.local_why = b;
  } else if (!in.platform_allowed) {
    d.local_why = in.platform_why.empty() ? "this platform may not run this model"
                                          : in.platform_why;
  } else if (!in.fits) {
    d.local_why = in.fit_why.empty() ? "the model does not fit in memory" : in.fit_why;
  }
  d.local_possible = d.local_why.empty();
  const bool cloud = in.cloud_configured && !in.offline;

  auto on_device = [&](const std::string& why) {
    d.route = Route::kOnDevice;
    d.reason = why;
    return d;
  };
  auto to_cloud = [&](const std::string& why) {
    d.route = Route::kCloud;
    d.reason = why;
    return d;
  };
  auto refuse = [&](const std::string& why) {
    d.route = Route::kRefuse;
    d.reason = why;
    return d;
  };

  if (in.privacy_required) {
    if (d.local_possible) return on_device("privacy required: the data stays on the device");
    return refuse("privacy required, so the request may not leave the device, and the device "
                  "cannot run it: " + d.local_why);
  }
  if (in.offline) {
    if (d.local_possible) return on_device("offline: only the device can answer");
    return refuse("offline, and the device cannot run it: " + d.local_why);
  }
  char lat[160] = "";
  const bool latency_needs_device = in.latency_target_ms > 0 &&
                                    in.latency_target_ms < in.cloud_ttft_ms;
  if (latency_needs_device) {
    std::snprintf(lat, sizeof(lat),
                  "a first-token target of %.0f ms is below the cloud's %.0f ms round trip",
                  in.latency_target_ms, in.cloud_ttft_ms);
    if (d.local_possible) return on_device(std::string(lat) + ": on the device");
    if (cloud) {
      return to_cloud(std::string(lat) + ", but the device cannot run it (" + d.local_why +
                      "): falling back to the cloud, which will miss the target");
    }
    return refuse(std::string(lat) + ", the device cannot run it (" + d.local_why +
                  ") and no cloud endpoint is configured");
  }
  if (in.prefer_on_device && d.local_possible) return on_device("the device can run it");
  if (cloud) {
    if (in.prefer_on_device) {
      return to_cloud("the device cannot run it (" + d.local_why + "): falling back to the cloud");
    }
    return to_cloud("no privacy, offline or latency need: the cloud (on-device only when one "
                    "demands it)");
  }
  if (d.local_possible) return on_device("no cloud endpoint is configured: on the device");
  return refuse("the device cannot run it (" + d.local_why +
                ") and no cloud endpoint is configured (set one to fall back)");
}

}  // namespace edgellm
