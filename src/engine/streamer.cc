#include "engine/streamer.h"

#include <algorithm>

namespace edgellm {

TextStreamer::TextStreamer(const TextSink& sink, std::vector<std::string> stop, int every_tokens,
                           int every_ms)
    : sink_(sink),
      stop_(std::move(stop)),
      every_tokens_(std::max(1, every_tokens)),
      every_ms_(std::max(0, every_ms)),
      last_emit_(std::chrono::steady_clock::now()) {
  std::erase_if(stop_, [](const std::string& s) { return s.empty(); });
}

// Length of the longest suffix of clean_ that is a proper prefix of a stop string.
size_t TextStreamer::HeldBack() const {
  size_t held = 0;
  for (const std::string& s : stop_) {
    const size_t max_len = std::min(s.size() - 1, clean_.size());
    for (size_t len = max_len; len > held; --len) {
      if (clean_.compare(clean_.size() - len, len, s, 0, len) == 0) {
        held = len;
        break;
      }
    }
  }
  return held;
}

bool TextStreamer::Emit(size_t n) {
  if (n == 0) return true;
  const std::string piece = clean_.substr(0, n);
  clean_.erase(0, n);
  text_ += piece;
  ++pieces_;
  tokens_since_emit_ = 0;
  last_emit_ = std::chrono::steady_clock::now();
  if (sink_ && !sink_(piece)) {
    sink_cancelled_ = true;
    return false;
  }
  return true;
}

bool TextStreamer::CutAtStop() {
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, clean_.find(s));
  if (cut == std::string::npos) return false;
  clean_.resize(cut);
  stop_matched_ = true;
  return true;
}

bool TextStreamer::Push(std::string_view token_bytes) {
  decoder_.Push(token_bytes, &clean_);
  ++tokens_since_emit_;
  if (CutAtStop()) {
    Emit(clean_.size());
    return false;
  }
  // The first piece goes out at once: time to first text is the time to first token.
  const bool due = pieces_ == 0 || tokens_since_emit_ >= every_tokens_ ||
                   std::chrono::steady_clock::now() - last_emit_ >= every_ms_;
  if (!due) return true;
  return Emit(clean_.size() - HeldBack());
}

bool TextStreamer::Finish() {
  decoder_.Finish(&clean_);
  if (!stop_matched_) CutAtStop();
  return Emit(clean_.size());
}

}  // namespace edgellm
