// Incremental UTF-8 decoder for token streams.
//
// Tokens of byte-level vocabularies carry arbitrary byte runs: a Chinese
// character or an emoji is often split over two or three tokens. The decoder
// passes complete characters through, holds an incomplete trailing sequence
// until its continuation bytes arrive, and replaces bytes that can never form
// a character with U+FFFD, so its output is always valid UTF-8 and it never
// holds more than three bytes.
#pragma once

#include <string>
#include <string_view>

namespace edgellm {

class Utf8Decoder {
 public:
  // Appends the decodable part of pending + `bytes` to `out`.
  void Push(std::string_view bytes, std::string* out);
  // Flushes a held incomplete sequence as U+FFFD.
  void Finish(std::string* out);
  bool has_pending() const { return !pending_.empty(); }

 private:
  std::string pending_;
};

// True if `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace edgellm
