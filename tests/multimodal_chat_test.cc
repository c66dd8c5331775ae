// Media in conversations (the SmolVLM-256M-shape fixture): a turn with an image is encoded
// once, later turns reuse its KV cells and equal a fresh session fed the same history;
// context overflow drops the image's turn whole; a saved conversation with an image restores
// its cells and continues as the original would.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "edgellm/conversation.h"
#include "edgellm/session.h"
#include <nlohmann/json.hpp>
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

const std::string kImage = std::string(EDGELLM_TEST_SOURCE_DIR) +
                           "/third_party/llama.cpp/tools/mtmd/test-1.jpeg";

// The text model with its projector (64 image tokens a tile), loaded once.
Model& vision_model() {
  static std::unique_ptr<Model> model = [] {
    LoadOptions lo;
    lo.mmproj_path = testutil::synth_mmproj_path("smolvlm-256m");
    lo.image_max_tokens = 64;
    lo.mmproj_threads = 2;
    auto m = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"), lo);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }();
  return *model;
}

// Comparisons with a fresh session decode one position per call on both sides: on AVX-512
// (this machine) ggml sums a batch in another order than a single row, and a prompt decoded
// in one batch differs in the last bits from the same prompt cached turn by turn — enough to
// move a sampled token of a random-weights model (docs/conversations.md). Measured: a
// text-only 4-turn conversation at n_batch 512 differs from a fresh session at turn 4, at
// n_batch 1 it does not.
constexpr int32_t kOneByOne = 1;

std::unique_ptr<Session> new_session(Model& model, int32_t n_ctx = 2048, bool shift = true,
                                     int32_t n_batch = 512) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  // One thread: one-position decodes on two threads spend their time in the thread barrier
  // when ctest runs another test beside this one.
  so.n_threads = 1;
  so.warmup = false;
  so.context_shift = shift;
  so.n_batch = n_batch;
  auto s = Session::Create(model, so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return std::move(s).value();
}

// Random weights make every greedy step <end_of_utterance>: replies are sampled at
// temperature 1 with a fixed seed, end-of-generation ignored, so each depends on the
// distribution, which depends on the image. From the 40 likeliest tokens: over the whole
// near-uniform vocabulary a draw sits so close to a boundary that the last bits in which a
// cache filled turn by turn differs from one batch (docs/conversations.md) change it.
GenerateOptions sampled(int32_t max_tokens) {
  GenerateOptions g;
  g.temperature = 1.0f;
  g.top_k = 40;
  g.top_p = 1.0f;
  g.min_p = 0;
  g.seed = 7;
  g.max_tokens = max_tokens;
  g.ignore_eos = true;
  return g;
}

std::vector<uint8_t> image_bytes() {
  const std::string raw = testutil::read_file(kImage);
  return {raw.begin(), raw.end()};
}

// What a fresh session answers to `history` (ending with a user turn), through Generate.
std::string fresh_reply(const std::vector<ChatMessage>& history, int32_t max_tokens) {
  auto s = new_session(vision_model(), 2048, true, kOneByOne);
  GenerateOptions g = sampled(max_tokens);
  g.chat = true;
  g.history.assign(history.begin(), history.end() - 1);
  g.media = history.back().media;
  auto r = s->Generate(history.back().content, g);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->text : "";
}

const char* kTurns[] = {"What is in this picture?", "And what colour is it?",
                        "Is there a person?", "Say it in one word."};

// Turn 1 carries the image: it is encoded once; turns 2-4 keep its cells (n_cached covers
// it, nothing is encoded or even looked up), and turn 4's reply equals a fresh session's.
TEST(MultimodalChat, FourTurnsWithAnImageReuseItAndMatchAFreshSession) {
  auto s = new_session(vision_model(), 2048, true, kOneByOne);
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  int32_t image_end = 0;  // tokens up to the end of the image's run in the prompt
  for (int t = 0; t < 4; ++t) {
    GenerateOptions g = sampled(6);
    if (t == 0) g.media = {Media{kImage, {}}};
    auto r = (*c)->Send(kTurns[t], g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // Turn 1 (nothing reused yet) and turn 4 (three turns of cells reused, the image's
    // among them) against a fresh session fed the same history.
    if (t == 0 || t == 3) {
      EXPECT_EQ(r->text, fresh_reply(std::vector<ChatMessage>((*c)->history().begin(),
                                                              (*c)->history().end() - 1),
                                     6))
          << "turn " << t + 1;
    }
    EXPECT_EQ(r->stats.n_media, 1) << "turn " << t + 1;
    EXPECT_EQ(r->stats.n_media_tokens, 128);
    if (t == 0) {
      image_end = r->stats.n_prompt - 4;  // the question and the reply's opening come after
      EXPECT_GT(image_end, 128);
      continue;
    }
    EXPECT_GT(r->stats.n_cached, image_end) << "turn " << t + 1 << " did not keep the image";
    EXPECT_EQ(r->stats.media_encode_ms, 0) << "turn " << t + 1 << " encoded the image again";
    EXPECT_EQ(r->stats.media_chunks_cached, 0) << "turn " << t + 1 << " decoded the image again";
    EXPECT_LT(r->stats.n_prompt, 40) << "turn " << t + 1 << " prefilled more than its turn";
  }
  ASSERT_EQ((*c)->history().size(), 8u);
  EXPECT_EQ((*c)->history()[0].media.size(), 1u);
}

// A turn whose image is given as bytes is the same turn as one given as a file.
TEST(MultimodalChat, BytesAndAPathAreTheSameTurn) {
  std::string replies[2];
  for (int k = 0; k < 2; ++k) {
    auto s = new_session(vision_model());
    auto c = Conversation::Create(*s);
    ASSERT_TRUE(c.ok());
    GenerateOptions g = sampled(5);
    g.media = {k == 0 ? Media{kImage, {}} : Media{"", image_bytes()}};
    auto r = (*c)->Send("Describe <__media__> briefly.", g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    replies[k] = r->text;
  }
  EXPECT_EQ(replies[0], replies[1]);
}

// Save -> a new session (an app restart) -> Load: the cells come back with the image's, and
// the next turn is the one the original conversation gives.
TEST(MultimodalChat, ASavedConversationWithAnImageContinuesTheSame) {
  const std::string path = testutil::scratch_dir("mm-chat-save") + "/chat.kv";
  auto s = new_session(vision_model());
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok());
  GenerateOptions g = sampled(5);
  g.media = {Media{"", image_bytes()}};
  ASSERT_TRUE((*c)->Send(kTurns[0], g).ok());
  ASSERT_TRUE((*c)->Save(path).ok());
  auto expected = (*c)->Send(kTurns[1], sampled(6));
  ASSERT_TRUE(expected.ok());

  auto s2 = new_session(vision_model());
  RestoreInfo info;
  auto c2 = Conversation::Load(*s2, path, {}, &info);
  ASSERT_TRUE(c2.ok()) << c2.status().ToString();
  EXPECT_TRUE(info.kv_restored) << info.why_not;
  ASSERT_EQ((*c2)->history().size(), 2u);
  ASSERT_EQ((*c2)->history()[0].media.size(), 1u);
  EXPECT_EQ((*c2)->history()[0].media[0].bytes, image_bytes());
  auto got = (*c2)->Send(kTurns[1], sampled(6));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->text, expected->text);
  EXPECT_EQ(got->stats.media_encode_ms, 0);
  EXPECT_EQ(got->stats.media_chunks_cached, 0) << "the image's cells were not restored";

  // The same file for the text model alone: the history loads, the cells (computed from the
  // image) do not, and the turn that needs the image says what is missing.
  auto plain = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"));
  ASSERT_TRUE(plain.ok());
  auto s3 = new_session(**plain);
  RestoreInfo info3;
  auto c3 = Conversation::Load(*s3, path, {}, &info3);
  ASSERT_TRUE(c3.ok()) << c3.status().ToString();
  EXPECT_FALSE(info3.kv_restored);
  EXPECT_NE(info3.why_not.find("projector"), std::string::npos) << info3.why_not;
  auto refused = (*c3)->Send(kTurns[1], sampled(2));
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("mmproj"), std::string::npos);
  EXPECT_EQ((*c3)->history().size(), 2u) << "a refused turn changed the history";
}

// A small context: the turns go oldest first, the image's turn whole with its media; the
// reply after the drop equals a fresh session fed the kept history where the kept turns are
// decoded again (no KV shift).
TEST(MultimodalChat, OverflowDropsTheImagesTurnWhole) {
  for (bool shift : {true, false}) {
    auto s = new_session(vision_model(), 256, shift, shift ? 512 : kOneByOne);
    ConversationOptions co;
    co.keep_sampled_tokens = false;  // after the drop the prompt is text only: compared with
                                     // a fresh session's tokenization of the kept history
    auto c = Conversation::Create(*s, co);
    ASSERT_TRUE(c.ok());
    GenerateOptions g = sampled(24);
    g.media = {Media{kImage, {}}};
    ASSERT_TRUE((*c)->Send(kTurns[0], g).ok());
    int dropped = 0;
    for (int t = 1; t < 6 && dropped == 0; ++t) {
      auto r = (*c)->Send(kTurns[t % 4], sampled(24));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      dropped = r->stats.turns_dropped;
      if (dropped == 0) continue;
      EXPECT_TRUE((*c)->history()[0].media.empty()) << "the image's turn was kept";
      EXPECT_EQ(r->stats.n_media, 0);
      if (shift) continue;  // shifted cells are rotated, not recomputed: not bit-equal
      EXPECT_EQ(r->text, fresh_reply(std::vector<ChatMessage>((*c)->history().begin(),
                                                              (*c)->history().end() - 1),
                                     24))
          << "shift " << shift;
    }
    EXPECT_GT(dropped, 0) << "the context never filled";
  }
}

// The context fills mid-reply while a kept turn holds the image: without a KV shift the kept
// cells are decoded again, the image's from the encoded-media cache; the reply goes on. (With
// a shift the cells just move, as for text: OverflowDropsTheImagesTurnWhole.)
TEST(MultimodalChat, AKeptImageIsDecodedAgainWhenTheContextCannotShift) {
  {
    const bool shift = false;
    auto s = new_session(vision_model(), 320, shift);
    auto c = Conversation::Create(*s);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Send("Hello there.", sampled(8)).ok());
    GenerateOptions g = sampled(8);
    g.media = {Media{kImage, {}}};
    ASSERT_TRUE((*c)->Send(kTurns[0], g).ok());
    auto r = (*c)->Send("Now tell me a long story about it.", sampled(200));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_GE(r->stats.turns_dropped, 1) << "shift " << shift;
    EXPECT_GT(r->stats.n_gen, 100) << "shift " << shift;
    EXPECT_GT(r->stats.media_chunks_cached, 0) << "the kept image was not decoded again";
  }
}

// Media only in user turns, only with a projector; a refused turn leaves the history as it was.
TEST(MultimodalChat, MediaWhereTheyCannotGoAreClearErrors) {
  auto s = new_session(vision_model());
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok());
  ChatMessage bad{"assistant", "look"};
  bad.media = {Media{kImage, {}}};
  ASSERT_TRUE((*c)->SetHistory({{"user", "hi"}, bad, {"user", "and?"}}).ok());
  auto r = (*c)->Regenerate(sampled(2));
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("only user messages"), std::string::npos)
      << r.status().ToString();

  (*c)->Reset();
  GenerateOptions g = sampled(2);
  g.media = {Media{kImage, {}}, Media{kImage, {}}};
  auto two = (*c)->Send("one <__media__> only", g);
  EXPECT_EQ(two.status().code(), Code::kInvalidArgument);
  EXPECT_NE(two.status().message().find("1 media markers"), std::string::npos)
      << two.status().ToString();
  EXPECT_TRUE((*c)->history().empty());

  auto plain = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"));
  ASSERT_TRUE(plain.ok());
  auto s2 = new_session(**plain);
  auto c2 = Conversation::Create(*s2);
  ASSERT_TRUE(c2.ok());
  g.media = {Media{kImage, {}}};
  auto none = (*c2)->Send("what is it?", g);
  EXPECT_EQ(none.status().code(), Code::kFailedPrecondition);
  EXPECT_TRUE((*c2)->history().empty());

  auto url = media_from_data_url("data:image/png;base64,iVBORw0KGgo=");
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  EXPECT_EQ(url->bytes, (std::vector<uint8_t>{0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'}));
  EXPECT_FALSE(media_from_data_url("https://example.com/cat.jpg").ok());
  EXPECT_FALSE(media_from_data_url("data:image/png,rawtext").ok());
  EXPECT_FALSE(media_from_data_url("data:image/png;base64,@@@@").ok());
  EXPECT_FALSE(media_from_data_url("data:image/png;base64,").ok());
  EXPECT_FALSE(media_from_data_url("data:image/png;base64,AAAAAAAA", 4).ok());
}

// `edgellm chat --mmproj --image`: the first turn carries the image, /image attaches one to a
// later turn, the first image is not encoded again, and /image without a projector is refused.
TEST(MultimodalChat, ChatCliWithImages) {
  const std::string dir = testutil::scratch_dir("mm-chat-cli");
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  testutil::write_file(dir + "/in.txt", "What is this?\n/image " + kImage +
                                            "\nAnd now?\n/history\nThanks.\n");
  const auto r = testutil::run_cli(
      "chat -m " + text + " --mmproj " + testutil::synth_mmproj_path("smolvlm-256m") +
      " --image " + kImage + " --image-max-tokens 64 --ctx 1024 --threads 2 -n 3 --temp 0 "
      "--json < " + dir + "/in.txt");
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<nlohmann::json> turns;
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);) {
    if (!l.empty() && l[0] == '{') turns.push_back(nlohmann::json::parse(l));
  }
  ASSERT_EQ(turns.size(), 3u) << r.out << r.err;
  EXPECT_EQ(turns[0]["n_media"], 1);
  EXPECT_EQ(turns[0]["n_media_tokens"], 128);
  EXPECT_EQ(turns[1]["n_media"], 2);  // the first image (reused) and the one /image attached
  EXPECT_EQ(turns[1]["n_media_tokens"], 256);
  EXPECT_GT(turns[1]["n_cached"].get<int>(), 128) << "the first image was not reused";
  EXPECT_EQ(turns[2]["n_media"], 2);
  EXPECT_EQ(turns[2]["media_encode_ms"].get<double>(), 0);
  EXPECT_NE(r.out.find("user: [1 media] What is this?"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("attached to your next turn"), std::string::npos) << r.err;

  testutil::write_file(dir + "/in2.txt", "/image " + kImage + "\nhi\n");
  const auto plain = testutil::run_cli("chat -m " + text + " --ctx 512 -n 2 --temp 0 --json < " +
                                       dir + "/in2.txt");
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_NE(plain.err.find("restart chat with --mmproj"), std::string::npos) << plain.err;
}

}  // namespace
}  // namespace edgellm
