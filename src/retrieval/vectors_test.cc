// The f32 search scans the int8 copy and rescores only the rows its bound keeps: its hits must
// be the full f32 scan's, bit for bit, however close the scores are.
#include "retrieval/vectors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

namespace edgellm::retrieval {
namespace {

std::vector<float> unit(std::vector<float> v) {
  double s = 0;
  for (float x : v) s += static_cast<double>(x) * x;
  for (float& x : v) x = static_cast<float>(x / std::sqrt(s));
  return v;
}

// `n` unit vectors of `d` dims: spread at random, or (spread < 1) all near one direction, so
// that scores crowd together and the bound keeps many rows.
std::vector<std::vector<float>> make_rows(size_t n, int32_t d, float spread, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> z;
  std::vector<float> center(static_cast<size_t>(d));
  for (float& x : center) x = z(g);
  std::vector<std::vector<float>> rows;
  for (size_t r = 0; r < n; ++r) {
    std::vector<float> v(static_cast<size_t>(d));
    for (size_t i = 0; i < v.size(); ++i) v[i] = (1 - spread) * center[i] + spread * z(g);
    rows.push_back(unit(v));
  }
  return rows;
}

VectorMatrix make_matrix(const std::vector<std::vector<float>>& rows, VectorType type) {
  VectorMatrix m(type, static_cast<int32_t>(rows[0].size()));
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto blob = encode_vector(rows[r], type);
    EXPECT_TRUE(m.Append(static_cast<int64_t>(100 + r), blob).ok());
  }
  return m;
}

TEST(Vectors, BoundedInt8ScanGivesTheFullF32ScansHits) {
  for (float spread : {1.0f, 0.2f, 0.02f}) {
    const auto rows = make_rows(3000, 384, spread, 7);
    const VectorMatrix m = make_matrix(rows, VectorType::kF32);
    const auto queries = make_rows(12, 384, spread, 7 + 1);  // same center, other noise
    size_t rescored = 0;
    for (const auto& q : queries) {
      for (int32_t k : {1, 10, 50, 3005}) {
        ScanStats st;
        const auto got = m.TopK(q, k, &st);
        const auto want = m.TopKFullScan(q, k);
        ASSERT_EQ(got.size(), want.size()) << "spread " << spread << " k " << k;
        for (size_t i = 0; i < got.size(); ++i) {
          EXPECT_EQ(got[i].second, want[i].second) << "spread " << spread << " k " << k << " #" << i;
          EXPECT_EQ(std::memcmp(&got[i].first, &want[i].first, sizeof(float)), 0);
        }
        EXPECT_EQ(st.scanned, rows.size());
        if (k == 10) rescored += st.rescored;
      }
    }
    // Spread vectors: the bound leaves a few rows per query to rescore, not thousands.
    if (spread == 1.0f) {
      EXPECT_LT(rescored, queries.size() * 300) << rescored;
    }
  }
}

TEST(Vectors, Int8IndexScoresAreTheInt16QueryTimesInt8RowSums) {
  const auto rows = make_rows(500, 100, 1.0f, 3);  // 100: not a multiple of any SIMD width
  const VectorMatrix m = make_matrix(rows, VectorType::kInt8);
  const auto q = make_rows(1, 100, 1.0f, 4)[0];
  float amax = 0;
  for (float x : q) amax = std::max(amax, std::fabs(x));
  const float qs = amax / 32767.0f;
  const auto hits = m.TopK(q, 500);
  ASSERT_EQ(hits.size(), 500u);
  for (const auto& [score, id] : hits) {
    const auto rb = encode_vector(rows[static_cast<size_t>(id - 100)], VectorType::kInt8);
    float rs;
    std::memcpy(&rs, rb.data(), sizeof(float));
    const auto* x = reinterpret_cast<const int8_t*>(rb.data() + sizeof(float));
    int32_t dot = 0;
    for (int i = 0; i < 100; ++i) {
      dot += static_cast<int32_t>(std::lround(q[static_cast<size_t>(i)] / qs)) * x[i];
    }
    EXPECT_EQ(score, static_cast<float>(dot) * qs * rs) << id;
  }
  for (size_t i = 1; i < hits.size(); ++i) EXPECT_GE(hits[i - 1].first, hits[i].first);
}

TEST(Vectors, AWrongSizedBlobIsCorruptDataAndEdgesAreEmpty) {
  VectorMatrix m(VectorType::kF32, 8);
  const std::vector<uint8_t> short_blob(12);
  const Status s = m.Append(5, short_blob);
  EXPECT_EQ(s.code(), Code::kCorruptData);
  EXPECT_NE(s.message().find("chunk 5 has a vector of 12 bytes, not 32"), std::string::npos);
  EXPECT_EQ(m.rows(), 0u);
  EXPECT_TRUE(m.TopK(std::vector<float>(8, 0.5f), 3).empty());
  ASSERT_TRUE(m.Append(6, encode_vector(std::vector<float>(8, 0.25f), VectorType::kF32)).ok());
  EXPECT_TRUE(m.TopK(std::vector<float>(7, 0.5f), 3).empty());  // wrong dims
  EXPECT_TRUE(m.TopK(std::vector<float>(8, 0.5f), 0).empty());
  const auto one = m.TopK(std::vector<float>(8, 0.5f), 3);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].second, 6);
  EXPECT_FLOAT_EQ(one[0].first, 1.0f);
}

}  // namespace
}  // namespace edgellm::retrieval
