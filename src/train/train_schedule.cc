// The learning-rate schedule and the loss curve, shared by both training paths through
// ggml-opt's callbacks.
#include <algorithm>
#include <cmath>

#include "train/train_internal.h"

namespace edgellm::train {

std::atomic<Recorder*> g_recorder{nullptr};

ggml_opt_optimizer_params lr_schedule(void* ud) {
  auto* r = static_cast<Recorder*>(ud);  // opt_steps: the global step, kept by the callback
  ggml_opt_optimizer_params p = ggml_opt_get_default_optimizer_params(nullptr);
  // Linear warm-up over the first 2% of steps, then cosine from lr to lr / 20.
  const double total = std::max<int64_t>(1, r->total_steps);
  const double warm = std::max(1.0, total * 0.02);
  const double step = static_cast<double>(r->opt_steps);
  const double peak = r->o->lr, floor = peak / 20;
  double lr = step < warm ? peak * (step + 1) / warm
                          : floor + 0.5 * (peak - floor) *
                                        (1 + std::cos(M_PI * std::min(1.0, (step - warm) / (total - warm))));
  r->lr = lr;
  p.adamw.alpha = static_cast<float>(lr);
  p.adamw.wd = r->o->weight_decay;
  return p;
}

// Records the curve and reports progress; `loss` is the epoch's mean training loss so far.
void report_batch(Recorder* r, int64_t ibatch, int64_t ibatch_max, double loss) {
  const int every = std::max(1, r->o->report_every);
  if (ibatch % every != 0 && ibatch != ibatch_max) return;
  const double sum = loss * static_cast<double>(ibatch);
  const double interval = ibatch > r->last_ibatch
                              ? (sum - r->last_sum) / static_cast<double>(ibatch - r->last_ibatch)
                              : loss;
  r->last_ibatch = ibatch;
  r->last_sum = sum;
  const int64_t step = r->epoch * r->steps_per_epoch + ibatch;
  r->report->curve.push_back({step, interval});
  if (r->o->on_progress) {
    const double secs = std::chrono::duration<double>(Clock::now() - r->t0).count();
    if (!r->o->on_progress({r->epoch + 1, r->o->epochs, ibatch, ibatch_max, interval, r->lr, secs})) {
      r->stop.store(true);
    }
  }
}

void on_train_batch(bool train, ggml_opt_context_t, ggml_opt_dataset_t, ggml_opt_result_t result,
                    int64_t ibatch, int64_t ibatch_max, int64_t) {
  Recorder* r = g_recorder.load();
  if (!r || !train) return;
  r->opt_steps = r->epoch * r->steps_per_epoch + ibatch;  // drives the learning-rate schedule
  double loss = 0, unc = 0;
  ggml_opt_result_loss(result, &loss, &unc);
  report_batch(r, ibatch, ibatch_max, loss);
}

}  // namespace edgellm::train
