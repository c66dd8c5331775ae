// Stored vectors and exact search over them, held in memory.
//
// The query goes in as int16 (its rounding 256 times finer than int8's). An int8 index keeps
// int8 rows and scans them. An f32 index keeps its f32 rows and an int8 copy: the scan reads
// the int8 copy (a quarter of the bytes: a full f32 scan is bound by
// memory bandwidth, 19 ms just to read 100k x 384 floats on this machine), bounds each row's
// error, and rescores in f32 only the rows whose bound reaches the k-th best lower bound. The
// result is the full f32 scan's, exactly (tests/vectors_test.cc compares the two).
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

// Eight independent f32 sums (the compiler maps them onto SIMD lanes without reassociating).
float dot_f32(const float* a, const float* b, int32_t n);

// What the last TopK did: rows scanned in int8, rows rescored in f32 (f32 indexes only).
struct ScanStats {
  size_t scanned = 0;
  size_t rescored = 0;
};

class VectorMatrix {
 public:
  VectorMatrix(VectorType type, int32_t dims) : type_(type), dims_(dims) {}
  // Appends the row stored for chunk `id`; kCorruptData when the blob has the wrong size.
  Status Append(int64_t id, std::span<const uint8_t> blob);
  size_t rows() const { return ids_.size(); }
  // The `k` rows with the largest dot product with `q`, best first; for an f32 index the
  // same rows and scores as `TopKFullScan`.
  std::vector<std::pair<float, int64_t>> TopK(std::span<const float> q, int32_t k,
                                              ScanStats* stats = nullptr) const;
  // The reference: every f32 row's dot product (f32 indexes; the int8 scan otherwise).
  std::vector<std::pair<float, int64_t>> TopKFullScan(std::span<const float> q, int32_t k) const;

 private:
  void AppendInt8(std::span<const float> x);

  VectorType type_;
  int32_t dims_;
  std::vector<int64_t> ids_;
  std::vector<float> f32_;     // f32 indexes: the stored rows
  std::vector<int8_t> i8_;     // every index: the int8 rows (stored, or the f32 rows' copy)
  std::vector<float> scales_;  // per row: x ~ scale * int8
  std::vector<float> err_;     // f32 indexes, per row: |x - scale * int8| (L2)
  std::vector<float> norm_;    // f32 indexes, per row: |scale * int8| (L2)
};

}  // namespace edgellm::retrieval
