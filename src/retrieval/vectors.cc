// VectorMatrix: exact top-k search over f32 or int8 rows (the scheme is in vectors.h).
#include "retrieval/vectors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <queue>

namespace edgellm::retrieval {
namespace {

using Hit = std::pair<float, int64_t>;

// The k best offers, worst on top; the same order of offers gives the same hits.
class TopKHeap {
 public:
  explicit TopKHeap(int32_t k) : k_(k) {}
  void Offer(float s, int64_t id) {
    if (static_cast<int32_t>(heap_.size()) < k_) {
      heap_.push({s, id});
    } else if (s > heap_.top().first) {
      heap_.pop();
      heap_.push({s, id});
    }
  }
  std::vector<Hit> Best() {
    std::vector<Hit> out;
    while (!heap_.empty()) {
      out.push_back(heap_.top());
      heap_.pop();
    }
    std::reverse(out.begin(), out.end());
    return out;
  }

 private:
  int32_t k_;
  std::priority_queue<Hit, std::vector<Hit>, std::greater<Hit>> heap_;
};

// The query in int16, the rows in int8: the compiler widens the rows and multiply-adds pairs
// in SIMD lanes (pmaddwd, smlal), in exact integer sums. Inlined into both scans below.
inline __attribute__((always_inline)) void scan_rows(const int16_t* q, const int8_t* rows,
                                                     size_t n_rows, int32_t d, int32_t* out) {
  for (size_t r = 0; r < n_rows; ++r) {
    const int8_t* x = rows + r * static_cast<size_t>(d);
    int32_t sum = 0;
    for (int32_t i = 0; i < d; ++i) sum += static_cast<int32_t>(q[i]) * static_cast<int32_t>(x[i]);
    out[r] = sum;
  }
}

void scan_rows_baseline(const int16_t* q, const int8_t* rows, size_t n, int32_t d, int32_t* out) {
  scan_rows(q, rows, n, d, out);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The build targets baseline x86-64 (SSE2); where the CPU has AVX2 the same loop compiled for
// it scans about twice as fast, with the same integer sums.
__attribute__((target("avx2"))) void scan_rows_avx2(const int16_t* q, const int8_t* rows,
                                                    size_t n, int32_t d, int32_t* out) {
  scan_rows(q, rows, n, d, out);
}
bool have_avx2() {
  static const bool yes = __builtin_cpu_supports("avx2");
  return yes;
}
#endif

void scan(const int16_t* q, const int8_t* rows, size_t n, int32_t d, int32_t* out) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (have_avx2()) return scan_rows_avx2(q, rows, n, d, out);
#endif
  scan_rows_baseline(q, rows, n, d, out);
}

// The query as int16 with its scale. Its magnitude is capped so that a row's sum of d products
// with int8 (at most 127 each) stays within int32: 32767 up to 516 dims, less above.
struct Query16 {
  std::vector<int16_t> q;
  float scale = 1;
};
Query16 quantize_query(std::span<const float> v) {
  const double cap = std::min(32767.0, std::floor(2147483647.0 / (127.0 * std::max<size_t>(1, v.size()))));
  float amax = 0;
  for (float x : v) amax = std::max(amax, std::fabs(x));
  Query16 out;
  out.scale = amax > 0 ? static_cast<float>(amax / cap) : 1.0f;
  out.q.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    out.q[i] = static_cast<int16_t>(std::lround(std::clamp(v[i] / out.scale, -static_cast<float>(cap),
                                                           static_cast<float>(cap))));
  }
  return out;
}

}  // namespace

std::vector<uint8_t> encode_vector(std::span<const float> v, VectorType type) {
  std::vector<uint8_t> out;
  if (type == VectorType::kF32) {
    out.resize(v.size() * sizeof(float));
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  float amax = 0;
  for (float x : v) amax = std::max(amax, std::fabs(x));
  const float scale = amax > 0 ? amax / 127.0f : 1.0f;
  out.resize(sizeof(float) + v.size());
  std::memcpy(out.data(), &scale, sizeof(float));
  auto* q = reinterpret_cast<int8_t*>(out.data() + sizeof(float));
  for (size_t i = 0; i < v.size(); ++i) {
    q[i] = static_cast<int8_t>(std::lround(std::clamp(v[i] / scale, -127.0f, 127.0f)));
  }
  return out;
}

float dot_f32(const float* a, const float* b, int32_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l) acc[l] += a[i + l] * b[i + l];
  }
  float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void VectorMatrix::AppendInt8(std::span<const float> x) {
  const std::vector<uint8_t> b = encode_vector(x, VectorType::kInt8);
  float scale;
  std::memcpy(&scale, b.data(), sizeof(float));
  scales_.push_back(scale);
  const auto* q = reinterpret_cast<const int8_t*>(b.data() + sizeof(float));
  i8_.insert(i8_.end(), q, q + x.size());
  double err = 0, norm = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double xh = static_cast<double>(scale) * q[i];
    err += (x[i] - xh) * (x[i] - xh);
    norm += xh * xh;
  }
  err_.push_back(static_cast<float>(std::sqrt(err)));
  norm_.push_back(static_cast<float>(std::sqrt(norm)));
}

Status VectorMatrix::Append(int64_t id, std::span<const uint8_t> blob) {
  const size_t d = static_cast<size_t>(dims_);
  const size_t want = type_ == VectorType::kF32 ? d * sizeof(float) : sizeof(float) + d;
  if (blob.size() != want) {
    return Status::CorruptData("chunk " + std::to_string(id) + " has a vector of " +
                               std::to_string(blob.size()) + " bytes, not " +
                               std::to_string(want) + ": the index is damaged; remove it and "
                               "add the documents again");
  }
  ids_.push_back(id);
  if (type_ == VectorType::kF32) {
    const size_t at = f32_.size();
    f32_.resize(at + d);
    std::memcpy(f32_.data() + at, blob.data(), want);
    AppendInt8({f32_.data() + at, d});
  } else {
    float scale;
    std::memcpy(&scale, blob.data(), sizeof(float));
    scales_.push_back(scale);
    const auto* q = reinterpret_cast<const int8_t*>(blob.data() + sizeof(float));
    i8_.insert(i8_.end(), q, q + d);
  }
  return Status::Ok();
}

std::vector<Hit> VectorMatrix::TopKFullScan(std::span<const float> q, int32_t k) const {
  const size_t d = static_cast<size_t>(dims_);
  if (k <= 0 || q.size() != d) return {};
  if (type_ != VectorType::kF32) return TopK(q, k);
  TopKHeap heap(k);
  for (size_t r = 0; r < ids_.size(); ++r) heap.Offer(dot_f32(q.data(), &f32_[r * d], dims_), ids_[r]);
  return heap.Best();
}

// The f32 bound: with x' = scale * int8(x) and q' the query's int16 form,
//   q.x - q'.x' = q.(x - x') + (q - q').x',  so  |q.x - q'.x'| <= |q| |x - x'| + |q - q'| |x'|
// (Cauchy-Schwarz), plus a margin for float rounding in dot_f32. Every row of the exact top k
// has an upper bound at or above the k-th largest lower bound, so rescoring those rows in
// f32, in row order through the same heap, gives the full scan's hits.
std::vector<Hit> VectorMatrix::TopK(std::span<const float> q, int32_t k, ScanStats* stats) const {
  const size_t d = static_cast<size_t>(dims_);
  const size_t n = ids_.size();
  if (k <= 0 || q.size() != d) return {};
  const Query16 q16 = quantize_query(q);
  thread_local std::vector<int32_t> dots;  // reused: a fresh 400 KB per search costs page faults
  thread_local std::vector<float> upper;
  dots.resize(n);
  scan(q16.q.data(), i8_.data(), n, dims_, dots.data());
  if (stats) *stats = {n, 0};
  TopKHeap heap(k);
  if (type_ != VectorType::kF32) {
    for (size_t r = 0; r < n; ++r) heap.Offer(static_cast<float>(dots[r]) * q16.scale * scales_[r], ids_[r]);
    return heap.Best();
  }
  double qn2 = 0, qe2 = 0;
  for (size_t i = 0; i < d; ++i) {
    const double e = q[i] - static_cast<double>(q16.scale) * q16.q[i];
    qn2 += static_cast<double>(q[i]) * q[i];
    qe2 += e * e;
  }
  const float qnorm = static_cast<float>(std::sqrt(qn2));
  const float qerr = static_cast<float>(std::sqrt(qe2));
  if (!std::isfinite(qnorm)) return TopKFullScan(q, k);
  // The k-th largest lower bound, by a heap of the k largest seen so far.
  std::priority_queue<float, std::vector<float>, std::greater<float>> lows;
  upper.resize(n);
  for (size_t r = 0; r < n; ++r) {
    const float approx = static_cast<float>(dots[r]) * q16.scale * scales_[r];
    const float eps =
        qnorm * err_[r] + qerr * norm_[r] + 1e-4f * qnorm * (norm_[r] + err_[r]) + 1e-6f;
    upper[r] = approx + eps;
    const float low = approx - eps;
    if (static_cast<int32_t>(lows.size()) < k) {
      lows.push(low);
    } else if (low > lows.top()) {
      lows.pop();
      lows.push(low);
    }
  }
  const float tau = static_cast<int32_t>(lows.size()) < k ? -std::numeric_limits<float>::infinity()
                                                          : lows.top();
  size_t rescored = 0;
  for (size_t r = 0; r < n; ++r) {
    if (upper[r] < tau) continue;
    ++rescored;
    heap.Offer(dot_f32(q.data(), &f32_[r * d], dims_), ids_[r]);
  }
  if (stats) stats->rescored = rescored;
  return heap.Best();
}

}  // namespace edgellm::retrieval
