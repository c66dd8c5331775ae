#include "core/utf8.h"

#include <gtest/gtest.h>

namespace edgellm {
namespace {

std::string decode_bytewise(const std::string& s) {
  Utf8Decoder d;
  std::string out;
  for (char c : s) {
    const size_t before = out.size();
    d.Push(std::string_view(&c, 1), &out);
    EXPECT_TRUE(is_valid_utf8(out.substr(before)));
  }
  d.Finish(&out);
  return out;
}

TEST(Utf8Decoder, PassesValidTextSplitAnywhere) {
  const std::string text = "héllo 你好世界 🙂👍🏽 end";
  EXPECT_EQ(decode_bytewise(text), text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    Utf8Decoder d;
    std::string out;
    d.Push(text.substr(0, cut), &out);
    EXPECT_TRUE(is_valid_utf8(out));
    d.Push(text.substr(cut), &out);
    d.Finish(&out);
    EXPECT_EQ(out, text) << "cut at " << cut;
  }
}

TEST(Utf8Decoder, HoldsIncompleteCharacter) {
  Utf8Decoder d;
  std::string out;
  d.Push("\xE4\xBD", &out);  // first two bytes of 你
  EXPECT_EQ(out, "");
  EXPECT_TRUE(d.has_pending());
  d.Push("\xA0", &out);
  EXPECT_EQ(out, "你");
  EXPECT_FALSE(d.has_pending());
}

TEST(Utf8Decoder, ReplacesInvalidBytesWithoutStalling) {
  Utf8Decoder d;
  std::string out;
  d.Push("a\xFF" "b", &out);
  EXPECT_EQ(out, "a\xEF\xBF\xBD" "b");
  out.clear();
  d.Push("\xE4\xBD" "x", &out);  // a lead that never completes, then ASCII
  EXPECT_EQ(out, "\xEF\xBF\xBD" "x");
  out.clear();
  d.Push("\xC0\xAF", &out);  // overlong encoding of '/'
  EXPECT_TRUE(is_valid_utf8(out));
  EXPECT_EQ(out.find('/'), std::string::npos);
  out.clear();
  d.Push("\xED\xA0\x80", &out);  // a UTF-16 surrogate
  EXPECT_TRUE(is_valid_utf8(out));
  out.clear();
  d.Push("\xF0\x9F", &out);
  d.Finish(&out);  // truncated emoji at end of stream
  EXPECT_EQ(out, "\xEF\xBF\xBD");
}

TEST(Utf8Validation, RejectsMalformed) {
  EXPECT_TRUE(is_valid_utf8("ok 你好 🙂"));
  EXPECT_FALSE(is_valid_utf8("\x80"));
  EXPECT_FALSE(is_valid_utf8("\xE4\xBD"));
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
}

}  // namespace
}  // namespace edgellm
