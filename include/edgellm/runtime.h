// Runtime: one entry point for an app. Each request goes on-device or to the cloud as the
// scenario policy decides (policy.h), the model loads lazily on the first on-device request,
// and a path that fails before any text reached the sink falls back to the other one when
// the policy allows it (never to the cloud under privacy or offline). The result says which
// path served and why.
//
// Thread safety: one Generate() at a time; Cancel() from any thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "edgellm/cloud.h"
#include "edgellm/model.h"
#include "edgellm/policy.h"
#include "edgellm/session.h"
#include "edgellm/status.h"

namespace edgellm {

struct RouteReport {
  Route route = Route::kRefuse;  // the path about to serve (on-device or cloud)
  std::string reason;            // why, in one sentence
  bool fallback = false;         // the planned path failed and this is the other one
};

struct RuntimeOptions {
  // The on-device model. May be missing (then the cloud serves, or the request is refused).
  std::string model_path;
  LoadOptions load;
  SessionOptions session;
  // A draft model for speculative decoding (SessionOptions::draft_model): planned with the
  // model (PlanOptions::draft_path) and loaded with it. Default "": none.
  std::string draft_model_path;
  // The cloud (OpenAI-compatible). An empty base_url means no cloud.
  CloudOptions cloud;

  // The scenario (PolicyInputs): the data may not leave the device; no network; wanted time
  // to first token (0 = none); the cloud's best first-token time; use the device whenever it
  // can (false follows the seed's Decision 1: the device only when privacy, offline use or
  // latency demands it).
  bool privacy_required = false;
  bool offline = false;
  double latency_target_ms = 0;
  double cloud_ttft_ms = 200;
  bool prefer_on_device = false;

  // The device: plan against this much RAM (0 = this device's), read the device profile and
  // OS under this root ("" = the real /proc, /sys, /etc), and match this whitelist (default:
  // builtin_whitelist()).
  uint64_t ram_bytes = 0;
  std::string device_root;
  std::optional<Whitelist> whitelist;

  // Called on the Generate() thread when a path starts serving, before its first text: once,
  // and once more if it falls back.
  std::function<void(const RouteReport&)> on_route;
};

struct RoutedGeneration {
  Generation generation;
  Route route = Route::kOnDevice;  // the path that served: kOnDevice or kCloud
  std::string reason;              // the policy's reason, or the fallback's
  bool fell_back = false;          // the planned path failed before any text; the other served
  std::string failure;             // what failed on the planned path (when fell_back)
};

class Runtime {
 public:
  // Reads the device, the capabilities and the model's memory plan (no weights are read),
  // and decides. Fails only on unusable options (a bad cloud URL, an unreadable device).
  static Result<std::unique_ptr<Runtime>> Create(const RuntimeOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The standing decision and what it was made from.
  const PolicyDecision& decision() const;
  const PolicyInputs& inputs() const;

  // Routes and runs one request. A refusal is kFailedPrecondition with the policy's reason.
  // Errors of the path that served come back as they are (with the fallback's failure named
  // when both failed).
  Result<RoutedGeneration> Generate(std::string_view prompt, const GenerateOptions& options = {},
                                    const TextSink& sink = {});
  void Cancel();

  // Loads the on-device model and creates its session now, when the decision is on-device
  // (a no-op otherwise, or when already loaded), so a caller can show load progress and
  // apply LoRA adapters before the first request. A failure is remembered: Generate() then
  // falls back (when allowed) without loading again.
  Status Prepare();

  // The on-device model and session once loaded (nullptr before), e.g. for LoRA.
  const Model* model() const;
  Session* session();

  struct Impl;

 private:
  explicit Runtime(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace edgellm
