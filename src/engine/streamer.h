// TextStreamer: turns a stream of token bytes into UI-friendly text pieces.
//
// Sends the first displayable text at once, then batches pieces (every N tokens
// or after a time bound), never splits a UTF-8
// character, holds back text that may be the start of a stop string, and cuts
// the text at the first stop string. The concatenation of the pieces handed to
// the sink is exactly text().
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.h"
#include "edgellm/session.h"

namespace edgellm {

class TextStreamer {
 public:
  // `sink` may be empty; it must outlive the streamer.
  TextStreamer(const TextSink& sink, std::vector<std::string> stop, int every_tokens,
               int every_ms);

  // Adds one token's bytes. Returns false when generation should end: a stop
  // string matched (stop_matched()) or the sink returned false (sink_cancelled()).
  bool Push(std::string_view token_bytes);
  // Flushes everything still held. Returns false if the sink asked to cancel.
  bool Finish();

  bool stop_matched() const { return stop_matched_; }
  bool sink_cancelled() const { return sink_cancelled_; }
  // Text emitted so far (after Finish(): the whole output).
  const std::string& text() const { return text_; }
  int pieces() const { return pieces_; }

 private:
  bool Emit(size_t n);
  // Truncates clean_ at the first stop string; true when one matched.
  bool CutAtStop();
  size_t HeldBack() const;

  const TextSink& sink_;
  std::vector<std::string> stop_;
  int every_tokens_;
  std::chrono::milliseconds every_ms_;
  Utf8Decoder decoder_;
  std::string clean_;  // decoded, not yet emitted
  std::string text_;   // emitted
  int tokens_since_emit_ = 0;
  int pieces_ = 0;
  std::chrono::steady_clock::time_point last_emit_;
  bool stop_matched_ = false;
  bool sink_cancelled_ = false;
};

}  // namespace edgellm
