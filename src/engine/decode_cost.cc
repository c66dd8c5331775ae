#include "engine/decode_cost.h"

#include <algorithm>
#include <cmath>

#include "engine/llama_glue.h"

namespace edgellm::engine {

static_assert(DecodeCost::kSizes == kMaxDraftTokens + 1, "a size for every check batch");

namespace {

constexpr double kAlpha = 0.15;   // weight of the newest sample in each size's average
constexpr int32_t kMaxWeight = 8;  // a size's weight in the fit: its samples, up to this

}  // namespace

void DecodeCost::Record(int32_t batch, double ms, int32_t n_threads) {
  if (batch < 1 || batch > kSizes || !std::isfinite(ms) || ms <= 0) return;
  if (n_threads > 0 && n_threads != n_threads_) {
    // Other threads, other times: measured again, from the slope learned so far.
    if (n_threads_ != 0) {
      ms_.fill(0);
      n_.fill(0);
      measured_ = false;
    }
    n_threads_ = n_threads;
  }
  double& avg = ms_[static_cast<size_t>(batch)];
  avg = avg == 0 ? ms : avg + kAlpha * (ms - avg);
  ++n_[static_cast<size_t>(batch)];
  since_one_ = batch == 1 ? 0 : since_one_ + 1;
  Fit();
}

void DecodeCost::Fit() {
  // Weighted least squares of ms against x = batch - 1.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  int32_t sizes = 0;
  for (int32_t b = 1; b <= kSizes; ++b) {
    if (n_[static_cast<size_t>(b)] == 0) continue;
    const double w = std::min(n_[static_cast<size_t>(b)], kMaxWeight);
    const double x = b - 1, y = ms_[static_cast<size_t>(b)];
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    ++sizes;
  }
  if (sizes == 0) return;
  const double den = sw * sxx - sx * sx;
  if (sizes >= 2 && den > 0) {
    const double b = (sw * sxy - sx * sy) / den;
    const double a = (sy - b * sx) / sw;
    if (a > 0) {
      one_ms_ = a;
      slope_ = std::clamp(b / a, 0.0, 2.0);
      measured_ = true;
      return;
    }
  }
  // One size timed (or a degenerate fit): the slope stays, one token's time follows from it.
  const double x = sx / sw, y = sy / sw;
  one_ms_ = y / (1.0 + slope_ * x);
}

double DecodeCost::Relative(int32_t batch) const {
  if (batch <= 1) return 1.0;
  const double ms1 = timed(1) ? ms_[1] : one_ms_;
  if (!(ms1 > 0)) return 1.0 + slope_ * (batch - 1);
  const int32_t n = std::min(batch, kSizes);
  double ms = 0;
  if (timed(n)) {
    ms = ms_[static_cast<size_t>(n)];
  } else {
    // Between the nearest timed sizes (one token's time below all of them), else along the
    // line past the largest.
    int32_t lo = 1;
    double lo_ms = ms1;
    for (int32_t b = n - 1; b > 1; --b) {
      if (timed(b)) {
        lo = b;
        lo_ms = ms_[static_cast<size_t>(b)];
        break;
      }
    }
    int32_t hi = 0;
    for (int32_t b = n + 1; b <= kSizes && hi == 0; ++b) {
      if (timed(b)) hi = b;
    }
    if (hi > 0) {
      const double t = static_cast<double>(n - lo) / (hi - lo);
      ms = lo_ms + t * (ms_[static_cast<size_t>(hi)] - lo_ms);
    } else {
      ms = lo_ms + slope_ * one_ms_ * (n - lo);
    }
  }
  // Sizes past kSizes (not asked for by the speculator) along the line.
  if (batch > n) ms += slope_ * one_ms_ * (batch - n);
  return std::max(1.0, ms / ms1);
}

}  // namespace edgellm::engine
