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

TEST(TextStreamer, FirstTextAtOnceThenEveryNTokens) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {}, 4, 1000000);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.Push("ab"));
  // After token 1 (the first text goes out at once), then after tokens 5 and 9.
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"ab", "abababab", "abababab"}));
  ASSERT_TRUE(s.Finish());
  EXPECT_EQ(c.pieces.size(), 4u);
  EXPECT_EQ(c.joined(), "abababababababababab");
  EXPECT_EQ(c.joined(), s.text());
}

TEST(TextStreamer, FirstPieceWaitsForAWholeCharacter) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {}, 4, 1000000);
  const std::string ni = "你";
  ASSERT_TRUE(s.Push(ni.substr(0, 1)));  // a partial character is not text yet
  EXPECT_TRUE(c.pieces.empty());
  ASSERT_TRUE(s.Push(ni.substr(1)));
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"你"}));
  ASSERT_TRUE(s.Push("a"));  // now batched again
  EXPECT_EQ(c.pieces.size(), 1u);
}

TEST(TextStreamer, TimeBoundFlushesEarly) {
  Collect c;
  TextSink sink = c.sink();
  TextStreamer s(sink, {}, 1000, 5);
  ASSERT_TRUE(s.Push("x"));
  ASSERT_TRUE(s.Push("y"));
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"x"}));  // "y" waits for the time bound
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(s.Push("z"));
  EXPECT_EQ(c.pieces, (std::vector<std::string>{"x", "yz"}));
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
