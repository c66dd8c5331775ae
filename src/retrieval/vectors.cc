// VectorMatrix: exact top-k search over f32 or int8 rows.
#include "retrieval/vectors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <queue>

namespace edgellm::retrieval {

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

// Eight independent sums: the compiler maps them onto SIMD lanes without reassociating
// (no -ffast-math needed); the tail runs scalar.
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

int32_t dot_i8(const int8_t* a, const int8_t* b, int32_t n) {
  int32_t sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += static_cast<int32_t>(a[i]) * static_cast<int32_t>(b[i]);
  return sum;
}

void VectorMatrix::Clear() {
  ids_.clear();
  f32_.clear();
  i8_.clear();
  scales_.clear();
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
  } else {
    float scale;
    std::memcpy(&scale, blob.data(), sizeof(float));
    scales_.push_back(scale);
    const size_t at = i8_.size();
    i8_.resize(at + d);
    std::memcpy(i8_.data() + at, blob.data() + sizeof(float), d);
  }
  return Status::Ok();
}

std::vector<std::pair<float, int64_t>> VectorMatrix::TopK(std::span<const float> q,
                                                          int32_t k) const {
  using Hit = std::pair<float, int64_t>;
  std::priority_queue<Hit, std::vector<Hit>, std::greater<Hit>> heap;  // the k best, worst on top
  const size_t d = static_cast<size_t>(dims_);
  auto offer = [&](float s, int64_t id) {
    if (static_cast<int32_t>(heap.size()) < k) {
      heap.push({s, id});
    } else if (s > heap.top().first) {
      heap.pop();
      heap.push({s, id});
    }
  };
  if (k <= 0 || q.size() != d) return {};
  if (type_ == VectorType::kF32) {
    for (size_t r = 0; r < ids_.size(); ++r) {
      offer(dot_f32(q.data(), f32_.data() + r * d, dims_), ids_[r]);
    }
  } else {
    const std::vector<uint8_t> qb = encode_vector(q, VectorType::kInt8);
    float qscale;
    std::memcpy(&qscale, qb.data(), sizeof(float));
    const auto* qi = reinterpret_cast<const int8_t*>(qb.data() + sizeof(float));
    for (size_t r = 0; r < ids_.size(); ++r) {
      const int32_t dot = dot_i8(qi, i8_.data() + r * d, dims_);
      offer(static_cast<float>(dot) * qscale * scales_[r], ids_[r]);
    }
  }
  std::vector<Hit> out;
  while (!heap.empty()) {
    out.push_back(heap.top());
    heap.pop();
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace edgellm::retrieval
