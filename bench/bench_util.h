// Helpers shared by the benchmarks. Public API only.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"

namespace bench {

// The median (the mean of the middle two for an even count); 0 for none.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A prompt of exactly n tokens: " the" is one token in byte-level BPE vocabularies.
inline std::string prompt_of(const edgellm::Model& m, int n) {
  std::string p = "the";
  for (int i = 1; i < n; ++i) p += " the";
  auto toks = m.Tokenize(p, true);
  while (toks.ok() && static_cast<int>(toks->size()) > n && p.size() > 4) {
    p.resize(p.size() - 4);
    toks = m.Tokenize(p, true);
  }
  return p;
}

// Runs `cmd` and returns its stdout; false when it cannot start or exits non-zero.
inline bool capture(const std::string& cmd, std::string* out) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return false;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out->append(buf, n);
  return pclose(p) == 0;
}

}  // namespace bench
