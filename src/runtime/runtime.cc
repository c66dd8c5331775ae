// Runtime: policy routing, lazy on-device load, and fallback between device and cloud.
#include "edgellm/runtime.h"

#include <atomic>
#include <cstdio>
#include <filesystem>

#include "edgellm/device.h"
#include "edgellm/planner.h"

namespace edgellm {
namespace {

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  return buf;
}

}  // namespace

struct Runtime::Impl {
  RuntimeOptions options;
  PolicyInputs inputs;
  PolicyDecision decision;
  std::unique_ptr<CloudClient> cloud;
  std::unique_ptr<Model> model;
  std::unique_ptr<Model> draft;  // RuntimeOptions::draft_model_path
  std::unique_ptr<Session> session;
  std::atomic<bool> cancel{false};
  std::atomic<Session*> running_session{nullptr};
  Status local_failure;  // a failed load or session creation, not retried

  bool cloud_allowed() const {
    return cloud != nullptr && !options.privacy_required && !options.offline;
  }

  Status EnsureLocal() {
    if (session) return Status::Ok();
    if (!local_failure.ok()) return local_failure;
    if (!model) {
      auto m = Model::Load(options.model_path, options.load);
      if (!m.ok()) {
        // A cancelled load may be retried; anything else would fail the same way again.
        if (m.status().code() != Code::kCancelled) local_failure = m.status();
        return m.status();
      }
      model = std::move(*m);
    }
    if (!draft && !options.draft_model_path.empty()) {
      auto d = Model::Load(options.draft_model_path);
      if (!d.ok()) {
        local_failure = Status(d.status().code(), "draft model: " + d.status().message());
        return local_failure;
      }
      draft = std::move(*d);
    }
    SessionOptions so = options.session;
    if (draft) so.draft_model = draft.get();
    auto s = Session::Create(*model, so);
    if (!s.ok()) {
      local_failure = s.status();
      return s.status();
    }
    session = std::move(*s);
    return Status::Ok();
  }

  void Report(Route route, const std::string& reason, bool fallback) {
    if (options.on_route) options.on_route({route, reason, fallback});
  }

  // Runs one path. *delivered tells whether any text reached the caller's sink.
  Result<Generation> RunLocal(std::string_view prompt, const GenerateOptions& o,
                              const TextSink& sink) {
    if (cancel.load()) return Generation{"", FinishReason::kCancelled, {}};
    EDGELLM_RETURN_IF_ERROR(EnsureLocal());
    running_session.store(session.get());
    // Session::Generate clears the session's cancel flag when it starts, so a Cancel() landing
    // between the load and that moment would be lost: the runtime's own flag is checked after
    // every prefill chunk and every piece as well.
    GenerateOptions lo = o;
    lo.on_prefill = [this, user = o.on_prefill](int32_t done, int32_t total) {
      return !cancel.load() && (!user || user(done, total));
    };
    const TextSink guarded = [this, &sink](std::string_view piece) {
      return !cancel.load() && (!sink || sink(piece));
    };
    auto g = session->Generate(prompt, lo, guarded);
    running_session.store(nullptr);
    return g;
  }
  Result<Generation> RunCloud(std::string_view prompt, const GenerateOptions& o,
                              const TextSink& sink) {
    if (cancel.load()) return Generation{"", FinishReason::kCancelled, {}};
    if (!o.media.empty()) {  // the cloud client sends text: it would drop them silently
      return Status::FailedPrecondition("images and audio go to the on-device model only: the "
                                        "cloud fallback does not take media yet");
    }
    return cloud->Generate(prompt, o, sink);
  }
};

Runtime::Runtime(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Runtime::~Runtime() = default;
const PolicyDecision& Runtime::decision() const { return impl_->decision; }
const PolicyInputs& Runtime::inputs() const { return impl_->inputs; }
const Model* Runtime::model() const { return impl_->model.get(); }
Session* Runtime::session() { return impl_->session.get(); }

Status Runtime::Prepare() {
  if (impl_->decision.route != Route::kOnDevice) return Status::Ok();
  return impl_->EnsureLocal();
}

void Runtime::Cancel() {
  impl_->cancel.store(true);
  if (Session* s = impl_->running_session.load()) s->Cancel();
  if (impl_->cloud) impl_->cloud->Cancel();
}

Result<std::unique_ptr<Runtime>> Runtime::Create(const RuntimeOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  const RuntimeOptions& o = impl->options;
  if (!o.cloud.base_url.empty()) {
    auto c = CloudClient::Create(o.cloud);
    if (!c.ok()) return c.status();
    impl->cloud = std::move(*c);
  }

  DeviceOptions dopt;
  dopt.root = o.device_root;
  auto device = read_device_profile(dopt);
  if (!device.ok()) return device.status();
  const Capabilities caps = read_capabilities();
  const PlatformVerdict verdict = match_platform(o.whitelist ? *o.whitelist : builtin_whitelist(),
                                                 *device, read_os_name(o.device_root), caps);

  PolicyInputs& in = impl->inputs;
  in.privacy_required = o.privacy_required;
  in.offline = o.offline;
  in.latency_target_ms = o.latency_target_ms;
  in.cloud_ttft_ms = o.cloud_ttft_ms;
  in.cloud_configured = impl->cloud != nullptr;
  in.prefer_on_device = o.prefer_on_device;
  std::error_code ec;
  if (o.model_path.empty() || !std::filesystem::exists(o.model_path, ec)) {
    in.model_state = ModelState::kMissing;
  } else {
    PlanOptions po;
    po.ram_bytes = o.ram_bytes ? o.ram_bytes : device->total_ram_bytes;
    po.n_ctx = o.session.n_ctx;
    po.n_batch = o.session.n_batch;
    po.mmproj_path = o.load.mmproj_path;
    po.draft_path = o.draft_model_path;
    po.image_max_tokens = o.load.image_max_tokens;
    auto plan = plan_memory(o.model_path, po);
    if (!plan.ok() && plan.status().code() == Code::kInvalidArgument) {
      return plan.status();  // the options are unusable (e.g. a negative n_ctx), not the device
    }
    if (!plan.ok()) {
      // An unreadable model cannot run here; say why instead of failing the whole runtime.
      in.fits = false;
      in.fit_why = "the on-device model cannot be read (" + plan.status().message() + ")";
    } else {
      const uint64_t file_bytes = std::filesystem::file_size(o.model_path, ec);
      in.platform_allowed =
          model_allowed(verdict, plan->n_params / 1e9, file_bytes, &in.platform_why);
      in.fits = plan->fits;
      if (!plan->fits) {
        in.fit_why = "memory plan for " + gib(plan->ram_bytes) + " of RAM: " +
                     (plan->advice.empty() ? "needs " + gib(plan->total_bytes) +
                                                 ", the budget is " + gib(plan->budget_bytes)
                                           : plan->advice);
      }
    }
  }
  impl->decision = decide(in);
  return std::unique_ptr<Runtime>(new Runtime(std::move(impl)));
}

Result<RoutedGeneration> Runtime::Generate(std::string_view prompt, const GenerateOptions& o,
                                           const TextSink& sink) {
  Impl& im = *impl_;
  im.cancel.store(false);
  const PolicyDecision& d = im.decision;
  if (d.route == Route::kRefuse) return Status::FailedPrecondition("refused: " + d.reason);

  bool delivered = false;
  TextSink counting;
  if (sink) {
    counting = [&](std::string_view piece) {
      delivered = true;
      return sink(piece);
    };
  }
  const TextSink& use = sink ? counting : sink;

  RoutedGeneration out;
  out.route = d.route;
  out.reason = d.reason;
  im.Report(d.route, d.reason, false);
  Result<Generation> first = d.route == Route::kOnDevice ? im.RunLocal(prompt, o, use)
                                                         : im.RunCloud(prompt, o, use);
  if (first.ok()) {
    out.generation = std::move(*first);
    return out;
  }
  // Fall back only when nothing reached the sink (text is never sent twice) and the other
  // path is allowed: the cloud never under privacy or offline; the device only when it can.
  const Status failed = first.status();
  const bool can_fall_back =
      !delivered && failed.code() != Code::kCancelled && failed.code() != Code::kInvalidArgument &&
      (d.route == Route::kOnDevice ? im.cloud_allowed() : d.local_possible);
  if (!can_fall_back) return failed;

  const Route other = d.route == Route::kOnDevice ? Route::kCloud : Route::kOnDevice;
  out.route = other;
  out.fell_back = true;
  out.failure = failed.message();
  out.reason = d.route == Route::kOnDevice
                   ? "the on-device path failed (" + std::string(code_name(failed.code())) + ": " +
                         failed.message() + "); falling back to the cloud at " + im.cloud->url()
                   : "the cloud failed (" + std::string(code_name(failed.code())) + ": " +
                         failed.message() + "); falling back to the device";
  im.Report(other, out.reason, true);
  Result<Generation> second =
      other == Route::kOnDevice ? im.RunLocal(prompt, o, use) : im.RunCloud(prompt, o, use);
  if (!second.ok()) {
    return Status(second.status().code(), second.status().message() + " (after the " +
                                              route_name(d.route) +
                                              " path failed: " + failed.message() + ")");
  }
  out.generation = std::move(*second);
  return out;
}

}  // namespace edgellm
