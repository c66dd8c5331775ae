#include "engine/streamer.h"

#include <gtest/gtest.h>

#include <thread>

namespace edgellm {
namespace {

struct Collect {
  std::vector<std::string> pieces;
  TextSink sink() {
    return [this](std::string_view p) {
      pieces.emplace_back(p);
      return true;
    };
  }
  std::string joined() const {
    std::string s;
    for (const auto& p : pieces) s += p;
    return s;
  }
};

TEST(TextStreamer, BatchesEveryNTokens) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {}, 4, 1000000);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.Push("ab"));
  EXPECT_EQ(c.pieces.size(), 2u);  // after tokens 4 and 8
  EXPECT_EQ(c.pieces[0], "abababab");
  ASSERT_TRUE(s.Finish());
  EXPECT_EQ(c.pieces.size(), 3u);
  EXPECT_EQ(c.joined(), "abababababababababab");
  EXPECT_EQ(c.joined(), s.text());
}

TEST(TextStreamer, TimeBoundFlushesEarly) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {}, 1000, 5);
  ASSERT_TRUE(s.Push("x"));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(s.Push("y"));
  ASSERT_EQ(c.pieces.size(), 1u);
  EXPECT_EQ(c.pieces[0], "xy");
}

TEST(TextStreamer, NeverSplitsCharacters) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {}, 1, 0);
  const std::string text = "你好🙂";
  for (char ch : text) ASSERT_TRUE(s.Push(std::string(1, ch)));
  ASSERT_TRUE(s.Finish());
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"你", "好", "🙂"}));
}

TEST(TextStreamer, StopStringAcrossTokensIsCutAndNeverEmitted) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {"<END>"}, 1, 0);
  EXPECT_TRUE(s.Push("hello <E"));
  EXPECT_TRUE(s.Push("N"));
  EXPECT_FALSE(s.Push("D> more"));
  EXPECT_TRUE(s.stop_matched());
  s.Finish();
  EXPECT_EQ(s.text(), "hello ");
  EXPECT_EQ(c.joined(), "hello ");
}

TEST(TextStreamer, HeldPrefixIsReleasedWhenItDoesNotMatch) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {"<END>"}, 1, 0);
  EXPECT_TRUE(s.Push("a <E"));
  EXPECT_EQ(c.joined(), "a ");
  EXPECT_TRUE(s.Push("X"));
  EXPECT_EQ(c.joined(), "a <EX");
  s.Finish();
  EXPECT_FALSE(s.stop_matched());
}

TEST(TextStreamer, SinkReturningFalseCancels) {
  TextSink sink = [](std::string_view) { return false; };
  TextStreamer s(sink, {}, 1, 0);
  EXPECT_FALSE(s.Push("a"));
  EXPECT_TRUE(s.sink_cancelled());
}

}  // namespace
}  // namespace edgellm
