// A conversation's next prompt keeps the tokens its replies were sampled as
// (ConversationOptions::keep_sampled_tokens): chat::splice_held_tokens on the real byte-level
// BPE vocabulary (held tokens kept exactly as far as they spell the text, never ending inside
// a character, the rest tokenized so that the whole still spells the text), and the turns of
// a conversation prefilling only what is new.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "chat/token_splice.h"
#include "core/utf8.h"
#include "edgellm/conversation.h"
#include "edgellm/edgellm.h"
#include "engine/model_impl.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

class ConversationTokensTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto m = Model::Load(testutil::synth_model("tiny", "Q8_0"));
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    tiny_ = std::move(m.value()).release();
  }
  static void TearDownTestSuite() {
    delete tiny_;
    tiny_ = nullptr;
  }
  static const llama_vocab* vocab() { return tiny_->impl()->vocab; }
  static std::vector<llama_token> Tok(std::string_view text, bool add_special = false) {
    auto t = tokenize(vocab(), text, add_special, /*parse_special=*/true);
    EXPECT_TRUE(t.ok());
    return t.ok() ? std::vector<llama_token>(t->begin(), t->end()) : std::vector<llama_token>{};
  }
  static std::string Spell(const std::vector<llama_token>& toks) {
    std::string s;
    for (llama_token t : toks) s += token_bytes(vocab(), t, /*special=*/true);
    return s;
  }
  // Tokens of `text` one character (one tokenization of each) at a time: a spelling no
  // tokenizer picks for the whole, as a sampled reply may be.
  static std::vector<llama_token> Spelled(std::string_view text) {
    std::vector<llama_token> out;
    for (char c : text) {
      const std::vector<llama_token> one = Tok(std::string(1, c));
      out.insert(out.end(), one.begin(), one.end());
    }
    return out;
  }
  static inline Model* tiny_ = nullptr;
};

const std::string kHead = "<|im_start|>user\nWhat is the answer?<|im_end|>\n<|im_start|>assistant\n";
const std::string kTail = "<|im_end|>\n<|im_start|>user\nAnd why?<|im_end|>\n<|im_start|>assistant\n";

TEST_F(ConversationTokensTest, HeldTokensThatSpellTheReplyAreKept) {
  const std::string reply = "The answer is forty-two.";
  const std::string text = kHead + reply + kTail;
  const std::vector<llama_token> canonical = Tok(text, true);
  std::vector<llama_token> held = Tok(kHead, true);
  const size_t head = held.size();
  const std::vector<llama_token> sampled = Spelled(reply);
  held.insert(held.end(), sampled.begin(), sampled.end());
  // The held spelling is not the canonical one (it is longer, one token per character).
  ASSERT_GT(held.size(), head);
  ASSERT_FALSE(held.size() <= canonical.size() &&
               std::equal(held.begin(), held.end(), canonical.begin()));

  const std::vector<llama_token> out = chat::splice_held_tokens(vocab(), text, canonical, held);
  ASSERT_GE(out.size(), held.size());
  EXPECT_EQ(std::vector<llama_token>(out.begin(), out.begin() + held.size()), held);
  EXPECT_EQ(Spell(out), text);
  EXPECT_GT(out.size(), canonical.size());  // the reply one character per token
  // The tail tokenizes as it does in the whole text (it starts at a special token).
  const std::vector<llama_token> tail = Tok(kTail);
  EXPECT_EQ(std::vector<llama_token>(out.end() - tail.size(), out.end()), tail);
  EXPECT_GT(head, 0u);
}

TEST_F(ConversationTokensTest, KeptOnlyAsFarAsTheySpellTheText) {
  // The reply held ran past the history's text (a stop string the history drops), or the
  // history was edited: the held tokens stop where their bytes stop matching.
  const std::string text = kHead + "The answer is 42" + kTail;
  const std::vector<llama_token> canonical = Tok(text, true);
  std::vector<llama_token> held = Tok(kHead, true);
  const std::vector<llama_token> sampled = Spelled("The answer is 43, surely");
  held.insert(held.end(), sampled.begin(), sampled.end());
  const std::vector<llama_token> out = chat::splice_held_tokens(vocab(), text, canonical, held);
  EXPECT_EQ(Spell(out), text);
  const size_t kept = Tok(kHead, true).size() + Spelled("The answer is 4").size();
  ASSERT_GE(out.size(), kept);
  EXPECT_EQ(std::vector<llama_token>(out.begin(), out.begin() + kept),
            std::vector<llama_token>(held.begin(), held.begin() + kept));
  EXPECT_NE(out[kept], held[kept]);
}

TEST_F(ConversationTokensTest, NeverEndsInsideACharacter) {
  // Byte tokens for the first two bytes of "你" (E4 BD A0), then the text goes on with "好"
  // (E5 A5 BD) where "你" was: the held bytes E4 BD match nothing whole, so none are kept.
  llama_token e4 = -1, bd = -1;
  for (llama_token t = 0; t < llama_vocab_n_tokens(vocab()) && (e4 < 0 || bd < 0); ++t) {
    const std::string b = token_bytes(vocab(), t, false);
    if (b == "\xE4") e4 = t;
    if (b == "\xBD") bd = t;
  }
  ASSERT_GE(e4, 0);
  ASSERT_GE(bd, 0);
  const std::string text = kHead + "A\xE4\xBD\xA0" + kTail;  // "A你"
  const std::vector<llama_token> canonical = Tok(text, true);
  std::vector<llama_token> held = Tok(kHead + "A", true);
  const size_t before = held.size();
  held.push_back(e4);
  held.push_back(bd);
  const std::vector<llama_token> out = chat::splice_held_tokens(vocab(), text, canonical, held);
  EXPECT_EQ(Spell(out), text);
  // The two byte tokens spell the text's next bytes, but the rest would start inside "你".
  ASSERT_GT(out.size(), before);
  EXPECT_NE(out[before], e4);
}

TEST_F(ConversationTokensTest, BytesThatFormNoCharacterAreKeptForTheirReplacement) {
  // A sampled reply with a lone continuation byte (0x80): the reply's text, and so the
  // history, has U+FFFD there. The held tokens are kept through it and past it.
  llama_token b80 = -1;
  for (llama_token t = 0; t < llama_vocab_n_tokens(vocab()) && b80 < 0; ++t) {
    if (token_bytes(vocab(), t, false) == "\x80") b80 = t;
  }
  ASSERT_GE(b80, 0);
  const std::string text = kHead + "ok \xEF\xBF\xBD then more" + kTail;
  const std::vector<llama_token> canonical = Tok(text, true);
  std::vector<llama_token> held = Tok(kHead, true);
  const std::vector<llama_token> a = Spelled("ok "), b = Spelled(" then more");
  held.insert(held.end(), a.begin(), a.end());
  held.push_back(b80);
  held.insert(held.end(), b.begin(), b.end());
  const std::vector<llama_token> out = chat::splice_held_tokens(vocab(), text, canonical, held);
  ASSERT_GE(out.size(), held.size());
  EXPECT_EQ(std::vector<llama_token>(out.begin(), out.begin() + held.size()), held);
  // What the tokens spell, through the decoder a reply's text goes through, is the text.
  Utf8Decoder d;
  std::string decoded;
  for (llama_token t : out) d.Push(token_bytes(vocab(), t, true), &decoded);
  d.Finish(&decoded);
  EXPECT_EQ(decoded, text);
  // A held byte with no replacement in the text is not kept.
  const std::string plain = kHead + "ok  then more" + kTail;
  const std::vector<llama_token> none =
      chat::splice_held_tokens(vocab(), plain, Tok(plain, true), held);
  EXPECT_EQ(Spell(none), plain);
}

TEST_F(ConversationTokensTest, NothingToKeepGivesTheCanonicalTokens) {
  const std::string text = kHead + "Fine." + kTail;
  const std::vector<llama_token> canonical = Tok(text, true);
  EXPECT_EQ(chat::splice_held_tokens(vocab(), text, canonical, {}), canonical);
  const std::vector<llama_token> prefix(canonical.begin(), canonical.begin() + 5);
  EXPECT_EQ(chat::splice_held_tokens(vocab(), text, canonical, prefix), canonical);
  EXPECT_EQ(chat::splice_held_tokens(vocab(), text, canonical, canonical), canonical);
  const std::vector<llama_token> other = Tok("<|im_start|>system\nSomething else entirely");
  EXPECT_EQ(chat::splice_held_tokens(vocab(), text, canonical, other), canonical);
}

// Six turns: with the sampled tokens kept, every turn after the first prefills only its own
// turn (the previous reply's cells all stay), never more than the history tokenized afresh.
TEST_F(ConversationTokensTest, EachTurnPrefillsOnlyWhatIsNew) {
  const std::vector<std::string> turns = {
      "你好，请介绍一下你自己。", "What can you do when the phone is offline?",
      "端侧模型的优点是什么？", "Summarize that in one line, please.",
      "意图：明天上海会下雨吗", "Thanks. One more: why run it on the phone at all?"};
  int32_t prefilled[2] = {0, 0};
  for (bool keep : {false, true}) {
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 2048;
    auto s = Session::Create(*tiny_, so);
    ASSERT_TRUE(s.ok());
    ConversationOptions co;
    co.system_prompt = "Answer briefly.";
    co.keep_sampled_tokens = keep;
    auto c = Conversation::Create(**s, co);
    ASSERT_TRUE(c.ok());
    int32_t held = 0;  // cells the cache holds after the previous reply
    for (size_t i = 0; i < turns.size(); ++i) {
      GenerateOptions g;
      g.temperature = 0;
      g.max_tokens = 24;
      auto r = (*c)->Send(turns[i], g);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (i > 0) prefilled[keep] += r->stats.n_prompt;
      // Kept: all of it but a reply's last few tokens where the cut fell inside a character.
      if (keep && i > 0) {
        EXPECT_GE(r->stats.n_cached, held - 3) << "turn " << i;
      }
      held = r->stats.n_cached + r->stats.n_prompt + r->stats.n_gen;
    }
  }
  EXPECT_LE(prefilled[1], prefilled[0]);
  EXPECT_GT(prefilled[1], 0);
}

}  // namespace
}  // namespace edgellm
