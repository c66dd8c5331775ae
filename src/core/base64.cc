// Base64 encoding and strict decoding (base64.h).
#include "core/base64.h"

#include <array>

namespace edgellm {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> make_values() {
  std::array<int8_t, 256> v{};
  for (size_t i = 0; i < v.size(); ++i) v[i] = -1;
  for (int i = 0; i < 64; ++i) v[static_cast<uint8_t>(kAlphabet[i])] = static_cast<int8_t>(i);
  return v;
}

}  // namespace

std::string base64_encode(const uint8_t* data, size_t n) {
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t a = data[i];
    const uint32_t b = i + 1 < n ? data[i + 1] : 0;
    const uint32_t c = i + 2 < n ? data[i + 2] : 0;
    const uint32_t v = (a << 16) | (b << 8) | c;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out += i + 2 < n ? kAlphabet[v & 63] : '=';
  }
  return out;
}

bool base64_decode(std::string_view text, std::vector<uint8_t>* out) {
  static const std::array<int8_t, 256> values = make_values();
  out->clear();
  out->reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0, pad = 0;
  size_t symbols = 0;
  for (char ch : text) {
    if (ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t') continue;
    ++symbols;
    if (ch == '=') {
      ++pad;
      continue;
    }
    if (pad > 0) return false;  // data after padding
    const int8_t v = values[static_cast<uint8_t>(ch)];
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  if (pad > 2) return false;
  if (pad > 0 && symbols % 4 != 0) return false;
  if (pad == 0 && symbols % 4 == 1) return false;
  return true;
}

}  // namespace edgellm
