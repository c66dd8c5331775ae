// Deciding where a request runs: what this build and device can do (Capabilities), which
// platforms may run which models (a versioned JSON Whitelist), and the scenario policy that
// picks on-device, cloud or refuse, always with a reason.
//
// The seeds: run on the device only when privacy, offline use or first-token latency demands
// it, and otherwise use the cloud (first seed, Decision 1); check the platform against a
// capability whitelist before init, and on anything else degrade to the cloud instead of
// forcing a load that ends in an OOM kill (second seed).
//
// Thread safety: every function here is a pure function of its arguments, except
// read_capabilities() and read_os_name(), which read this process's build and files; all may be
// called from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "edgellm/device.h"
#include "edgellm/status.h"

namespace edgellm {

// ---- Capabilities ----

struct BackendDevice {
  std::string name;         // "CPU"
  std::string description;  // e.g. the CPU model
  std::string type;         // "cpu", "gpu", "igpu", "accel"
  uint64_t memory_total_bytes = 0;
  uint64_t memory_free_bytes = 0;
};

struct Capabilities {
  std::vector<std::string> backends;      // ggml backends compiled into this build: "CPU", ...
  std::vector<BackendDevice> devices;     // their devices
  std::vector<std::string> cpu_features;  // what ggml's CPU backend uses here: "AVX2", "NEON", ...
  bool has_backend(std::string_view name) const;  // case-insensitive
};

// Reads the ggml backend registry and ggml's CPU feature checks of this build.
Capabilities read_capabilities();

// The OS name from <root>/etc/os-release (NAME=...), else uname's sysname; "" if neither.
std::string read_os_name(const std::string& root = "");

// ---- Whitelist ----

// One platform the whitelist allows to run models on the device.
struct PlatformRule {
  std::string id;                 // "kirin-x90"
  std::vector<std::string> soc;   // any of these, case-insensitive substrings of the SoC/CPU name
  std::vector<std::string> os;    // any of these, case-insensitive substrings of the OS name;
                                  // empty = any OS
  double min_ram_gib = 0;         // total RAM in [min, max); max 0 = no upper bound
  double max_ram_gib = 0;
  std::string backend = "CPU";    // the backend this platform may use
  double max_params_b = 0;        // largest model, billions of parameters; 0 = no cap
  uint64_t max_model_bytes = 0;   // largest model file; 0 = no cap
};

struct Whitelist {
  int version = 0;                // of this document (schema "edgellm.whitelist" v1)
  std::vector<PlatformRule> platforms;
  // The safe path for a platform that matches no rule: CPU, with these caps.
  double default_max_params_b = 0;
  uint64_t default_max_model_bytes = 0;
};

// Parses and checks a whitelist document. kInvalidArgument naming the field otherwise.
Result<Whitelist> parse_whitelist(std::string_view json_text);
// kNotFound / kUnavailable for the file, else as parse_whitelist.
Result<Whitelist> load_whitelist(const std::string& path);
// The whitelist shipped with this build (edgellm's own defaults; see docs/policy.md).
const Whitelist& builtin_whitelist();

// What the whitelist allows on this platform.
struct PlatformVerdict {
  bool whitelisted = false;   // a rule matched
  std::string rule_id;        // "" when none did
  std::string backend = "CPU";
  double max_params_b = 0;    // 0 = no cap
  uint64_t max_model_bytes = 0;
  std::string reason;         // which rule and why, or why none matched
};

PlatformVerdict match_platform(const Whitelist& whitelist, const DeviceProfile& device,
                               const std::string& os_name, const Capabilities& caps);

// True when a model of `params_b` billions and `file_bytes` is within the verdict's caps;
// otherwise false with *why set.
bool model_allowed(const PlatformVerdict& verdict, double params_b, uint64_t file_bytes,
                   std::string* why);

// ---- Scenario policy ----

enum class Route { kOnDevice, kCloud, kRefuse };
const char* route_name(Route route);  // "on-device", "cloud", "refuse"

enum class ModelState { kPresent, kDownloading, kMissing };

struct PolicyInputs {
  bool privacy_required = false;  // the data may not leave the device
  bool offline = false;           // no network
  double latency_target_ms = 0;   // wanted time to first token; 0 = none
  // What the cloud's first token costs at best: the seed's "200 ms round trip at least".
  double cloud_ttft_ms = 200;
  bool cloud_configured = false;  // an endpoint is set
  // Prefer the device whenever it can run the request (the CLI's `run`); false follows the
  // seed's Decision 1: the device only when privacy, offline use or latency demands it.
  bool prefer_on_device = false;

  ModelState model_state = ModelState::kPresent;
  double download_fraction = 0;   // when kDownloading
  bool platform_allowed = true;   // model_allowed() on the platform verdict
  std::string platform_why;       // its reason when not allowed
  bool fits = true;               // the memory planner's verdict
  std::string fit_why;            // its figures and advice when it does not fit
};

struct PolicyDecision {
  Route route = Route::kRefuse;
  std::string reason;        // one sentence a user can act on
  bool local_possible = false;
  std::string local_why;     // why the device cannot run it ("" when it can)
};

PolicyDecision decide(const PolicyInputs& in);

}  // namespace edgellm
