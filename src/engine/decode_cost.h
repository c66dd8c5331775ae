// DecodeCost: what a decode of a batch of n tokens costs on this device, relative to one
// token, as speculative decoding needs it to decide how many guesses a check is worth.
//
// Measured, not assumed: a moving average of each batch size's time (1 to
// kMaxDraftTokens + 1 tokens). The cost is not a line: ggml's repacked CPU kernels (Q4_K on
// AVX2 and on ARM's i8mm, Q4_0 ...) multiply four batch rows at a time and each row left over
// one by one, so a batch of 4 can cost less than a batch of 3. Sizes not timed yet are read
// between the timed ones, and beyond the largest along the line fitted through all of them by
// weighted least squares, ms(n) = one * (1 + slope * (n - 1)); until two sizes are timed the
// slope is a prior (kPriorSlope).
// One per session: it is a property of the device, the model and the threads, so it is kept
// across generations (a short answer ends before a fresh estimate would learn), seeded by the
// session's warm-up, and started again when the thread count changes.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace edgellm::engine {

class DecodeCost {
 public:
  // Each further token of a batch costs this much of one token's decode until measured:
  // between what a wide SIMD core shows for a few tokens (~0.1) and a small 2-core VM (~0.8).
  static constexpr double kPriorSlope = 0.4;

  // A decode of `batch` tokens took `ms` with `n_threads` threads.
  void Record(int32_t batch, double ms, int32_t n_threads = 0);
  // Relative cost of a batch of `batch` tokens (1 for one token, at least 1 for any).
  double Relative(int32_t batch) const;
  // One token's decode, as measured so far (0 before any decode).
  double one_ms() const { return one_ms_; }
  // The fitted line's slope: each further token's cost, relative to one.
  double slope() const { return slope_; }
  // Whether a batch of `batch` tokens was timed.
  bool timed(int32_t batch) const {
    return batch >= 1 && batch <= kSizes && n_[static_cast<size_t>(batch)] > 0;
  }
  // Whether the slope comes from two or more timed batch sizes (not the prior).
  bool measured() const { return measured_; }
  // Decodes recorded since the last one-token decode (large when none was).
  int32_t since_one() const { return since_one_; }

  // Batch sizes timed: 1 to 1 + kMaxDraftTokens (llama_glue.h; checked in decode_cost.cc).
  static constexpr int32_t kSizes = 17;

 private:
  void Fit();

  std::array<double, kSizes + 1> ms_{};  // index: batch size; 0 when not timed
  std::array<int32_t, kSizes + 1> n_{};  // samples in each average
  int32_t n_threads_ = 0;
  double one_ms_ = 0;
  double slope_ = kPriorSlope;
  bool measured_ = false;
  int32_t since_one_ = 1 << 20;
};

}  // namespace edgellm::engine
