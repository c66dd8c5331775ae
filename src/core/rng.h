// SplitMix64: the small deterministic generator behind synthetic weights, LoRA adapters and
// the training corpus (the same seed gives the same bytes on every platform).
#pragma once

#include <cstdint>
#include <vector>

namespace edgellm {

struct SplitMix64 {
  uint64_t s;
  // Stream `index` of a family of generators seeded by `seed` (one per tensor, say).
  static SplitMix64 stream(uint64_t seed, uint64_t index) {
    return SplitMix64{seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull};
  }
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 24 bits.
  float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  // Uniform in [0, n), n > 0.
  int below(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(below(static_cast<int>(v.size())))];
  }
};

}  // namespace edgellm
