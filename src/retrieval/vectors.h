// Stored vectors and exact search over them: f32 or int8 rows held in memory, dot products
// written so the compiler vectorizes them (8 independent lanes), top k by a small heap.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "edgellm/index.h"
#include "edgellm/status.h"

namespace edgellm::retrieval {

// The bytes a vector is stored as: `dims` f32, or an f32 scale and `dims` int8 (symmetric,
// scale = max |x| / 127).
std::vector<uint8_t> encode_vector(std::span<const float> v, VectorType type);

float dot_f32(const float* a, const float* b, int32_t n);
int32_t dot_i8(const int8_t* a, const int8_t* b, int32_t n);

class VectorMatrix {
 public:
  VectorMatrix(VectorType type, int32_t dims) : type_(type), dims_(dims) {}
  void Clear();
  // Appends the row stored for chunk `id`; kCorruptData when the blob has the wrong size.
  Status Append(int64_t id, std::span<const uint8_t> blob);
  size_t rows() const { return ids_.size(); }
  // The `k` rows with the largest dot product with `q` (normalized), best first.
  std::vector<std::pair<float, int64_t>> TopK(std::span<const float> q, int32_t k) const;

 private:
  VectorType type_;
  int32_t dims_;
  std::vector<int64_t> ids_;
  std::vector<float> f32_;
  std::vector<int8_t> i8_;
  std::vector<float> scales_;
};

}  // namespace edgellm::retrieval
