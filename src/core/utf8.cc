#include "core/utf8.h"

#include <cstdint>

namespace edgellm {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// For a lead byte: the sequence length and the allowed range of the second byte.
// Returns 0 for a byte that cannot start a sequence.
int sequence_length(uint8_t b, uint8_t* lo, uint8_t* hi) {
  *lo = 0x80;
  *hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return 2;
  if (b >= 0xE0 && b <= 0xEF) {
    if (b == 0xE0) *lo = 0xA0;  // no overlongs
    if (b == 0xED) *hi = 0x9F;  // no surrogates
    return 3;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F;  // <= U+10FFFF
    return 4;
  }
  return 0;
}

enum class Step { kChar, kInvalid, kIncomplete };

// Classifies the sequence at s[i]; `len` receives the bytes consumed.
Step classify(std::string_view s, size_t i, size_t* len) {
  uint8_t lo, hi;
  const int n = sequence_length(static_cast<uint8_t>(s[i]), &lo, &hi);
  if (n == 0) {
    *len = 1;
    return Step::kInvalid;
  }
  for (int k = 1; k < n; ++k) {
    if (i + k >= s.size()) {
      *len = s.size() - i;
      return Step::kIncomplete;
    }
    const uint8_t c = static_cast<uint8_t>(s[i + k]);
    const uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
    if (c < l || c > h) {
      *len = k;  // the maximal subpart is replaced by one U+FFFD
      return Step::kInvalid;
    }
  }
  *len = n;
  return Step::kChar;
}

}  // namespace

void Utf8Decoder::Push(std::string_view bytes, std::string* out) {
  std::string buf;
  std::string_view s = bytes;
  if (!pending_.empty()) {
    buf = pending_ + std::string(bytes);
    pending_.clear();
    s = buf;
  }
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    switch (classify(s, i, &len)) {
      case Step::kChar: out->append(s.substr(i, len)); break;
      case Step::kInvalid: out->append(kReplacement); break;
      case Step::kIncomplete: pending_.assign(s.substr(i)); return;
    }
    i += len;
  }
}

void Utf8Decoder::Finish(std::string* out) {
  if (!pending_.empty()) out->append(kReplacement);
  pending_.clear();
}

bool is_valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    size_t len = 0;
    if (classify(s, i, &len) != Step::kChar) return false;
    i += len;
  }
  return true;
}

}  // namespace edgellm
