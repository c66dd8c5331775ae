// Images under M-RoPE: the Qwen2-VL-2B-shape fixture (a Qwen2 text model whose image tokens
// take grid positions: all of an image's cells at one time position, the next token
// max(rows, columns) later) against llama-mtmd-cli, and in conversations, whose KV reuse,
// overflow and saved files must keep those positions.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "edgellm/conversation.h"
#include "edgellm/session.h"
#include "testutil/fixtures.h"
#include "testutil/tool_run.h"

namespace edgellm {
namespace {

constexpr const char* kPreset = "qwen2-vl-2b";
const std::string kImage = std::string(EDGELLM_TEST_SOURCE_DIR) +
                           "/third_party/llama.cpp/tools/mtmd/test-1.jpeg";

std::string text_model() { return testutil::synth_multimodal(kPreset, "Q8_0"); }
std::string projector() { return testutil::synth_mmproj_path(kPreset); }

// The pair at 64 image tokens at most (test-1.jpeg: a 9 x 6 grid, 54 tokens, 9 positions).
Model& vision_model() {
  static std::unique_ptr<Model> model = [] {
    LoadOptions lo;
    lo.mmproj_path = projector();
    lo.image_max_tokens = 64;
    lo.mmproj_threads = 2;
    auto m = Model::Load(text_model(), lo);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }();
  return *model;
}

std::unique_ptr<Session> new_session(int32_t n_ctx = 1024, bool shift = true) {
  SessionOptions so;
  so.n_ctx = n_ctx;
  // One decode thread: one-position decodes on two threads spend their time in ggml's thread
  // barrier when ctest runs another test beside this one (the encoder keeps its 2).
  so.n_threads = 1;
  so.warmup = false;
  so.context_shift = shift;
  auto s = Session::Create(vision_model(), so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

GenerateOptions greedy(int32_t n) {
  GenerateOptions g;
  g.temperature = 0;
  // Every guess checked: the same greedy text run after run (docs/speculative.md).
  g.speculative.adaptive = false;
  g.max_tokens = n;
  g.ignore_eos = true;
  return g;
}

using testutil::run_tool;
using testutil::trim_newlines;

// Greedy text for an image prompt equals llama-mtmd-cli's: the image's cells at grid
// positions, the text after them at the grid's side later. The CLI renders only the new
// message (no system turn), as its -v log shows; edgellm gets that text as a raw prompt.
TEST(Mrope, GreedyTextEqualsLlamaMtmdCli) {
  const testutil::CliRun ref = run_tool(std::string(EDGELLM_LLAMA_MTMD_CLI) + " -m " + text_model() +
                               " --mmproj " + projector() + " --image " + kImage +
                               " -p 'What is in the image?' -n 16 --temp 0 -t 2 --no-warmup"
                               " -c 1024 --image-max-tokens 64 --ignore-eos -v");
  ASSERT_EQ(ref.rc, 0) << ref.err.substr(ref.err.size() > 4000 ? ref.err.size() - 4000 : 0);
  const std::string formatted = "<|im_start|>user\n" + std::string(media_marker()) +
                                "What is in the image?<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_NE(ref.err.find("formatted_chat.prompt: " + formatted), std::string::npos)
      << "llama-mtmd-cli formatted another prompt";
  EXPECT_NE(ref.err.find("image_tokens->nx = 9"), std::string::npos);

  auto s = new_session();
  ASSERT_NE(s, nullptr);
  GenerateOptions g = greedy(16);
  g.speculative.max_draft = 0;  // the reference decodes one token per step: so does this side
  g.media = {Media{kImage, {}}};
  auto r = s->Generate(formatted, g);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string want = trim_newlines(ref.out);
  EXPECT_GT(want.size(), 8u) << "the reference wrote nothing to compare";
  EXPECT_EQ(r->text, want);
  EXPECT_EQ(r->stats.n_media_tokens, 54);  // <|vision_start|> 9 x 6 <|vision_end|>
  EXPECT_GT(r->stats.media_encode_ms, 0);
  std::printf("edgellm: image decode %.1f ms, encode %.1f ms, prefill %.1f ms (%d tokens)\n",
              r->stats.media_decode_ms, r->stats.media_encode_ms, r->stats.prefill_ms,
              r->stats.n_prompt);
}

// What a fresh session answers to `history` (ending with a user turn), through Generate.
std::string fresh_reply(const std::vector<ChatMessage>& history, int32_t n) {
  auto s = new_session();
  GenerateOptions g = greedy(n);
  g.chat = true;
  g.history.assign(history.begin(), history.end() - 1);
  g.media = history.back().media;
  auto r = s->Generate(history.back().content, g);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->text : "";
}

const char* kTurns[] = {"What is in this picture?", "And what colour is it?",
                        "Say it in one word."};

// Three turns, the image in the first: later turns keep its cells (nothing encoded, only
// their own tokens prefilled) at the positions M-RoPE gave them, so the third reply equals a
// fresh session's fed the same history in one prefill.
TEST(Mrope, AConversationKeepsTheImageAndMatchesAFreshSession) {
  auto s = new_session();
  ASSERT_NE(s, nullptr);
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int t = 0; t < 3; ++t) {
    GenerateOptions g = greedy(6);
    if (t == 0) g.media = {Media{kImage, {}}};
    auto r = (*c)->Send(kTurns[t], g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->stats.n_media_tokens, 54);
    if (t == 0) continue;
    EXPECT_GT(r->stats.n_cached, 54) << "turn " << t + 1 << " did not keep the image";
    EXPECT_EQ(r->stats.media_encode_ms, 0) << "turn " << t + 1;
    EXPECT_EQ(r->stats.media_chunks_cached, 0) << "turn " << t + 1;
    EXPECT_LT(r->stats.n_prompt, 30) << "turn " << t + 1;
    if (t == 2) {
      EXPECT_EQ(r->text, fresh_reply(std::vector<ChatMessage>((*c)->history().begin(),
                                                              (*c)->history().end() - 1),
                                     6));
    }
  }
}

// An edited second turn cuts the cache after the image (a cut inside it would drop it whole),
// and an edited first turn cuts before it: both replies equal a fresh session's.
TEST(Mrope, EditingATurnCutsAtTheRightPosition) {
  auto s = new_session();
  ASSERT_NE(s, nullptr);
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok());
  GenerateOptions g = greedy(4);
  g.media = {Media{kImage, {}}};
  ASSERT_TRUE((*c)->Send(kTurns[0], g).ok());
  ASSERT_TRUE((*c)->Send(kTurns[1], greedy(4)).ok());
  // Drop the last exchange and ask something else: the image's cells stay.
  ASSERT_TRUE((*c)->Truncate(2).ok());
  auto r = (*c)->Send("Is it round?", greedy(6));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->stats.n_cached, 54);
  EXPECT_EQ(r->stats.media_chunks_cached, 0);
  EXPECT_EQ(r->text, fresh_reply(std::vector<ChatMessage>((*c)->history().begin(),
                                                          (*c)->history().end() - 1),
                                 6));
}

// No KV shift under M-RoPE: a small context (160) drops the oldest turn and decodes what stays
// (the image's turn among it) again at new positions, the image from the encoded cache.
TEST(Mrope, OverflowDecodesAKeptImageAgainAtNewPositions) {
  auto s = new_session(/*n_ctx=*/160);
  ASSERT_NE(s, nullptr);
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->Send("Hello there.", greedy(8)).ok());
  GenerateOptions g = greedy(8);
  g.media = {Media{kImage, {}}};
  ASSERT_TRUE((*c)->Send(kTurns[0], g).ok());
  auto r = (*c)->Send("Now tell me a long story about it.", greedy(60));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GE(r->stats.turns_dropped, 1) << "nothing was dropped";
  EXPECT_EQ(r->stats.n_gen, 60);
  EXPECT_GT(r->stats.media_chunks_cached, 0) << "the kept image was not decoded again";
}

// A saved conversation with an image under M-RoPE holds its history without the cells (their
// positions are not the file's yet): it loads, says so, and the next turn (the image decoded
// and encoded again) equals the original's.
TEST(Mrope, ASavedConversationReloadsWithoutTheCellsAndContinuesTheSame) {
  const std::string path = testutil::scratch_dir("mrope-save") + "/chat.kv";
  auto s = new_session();
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok());
  GenerateOptions g = greedy(4);
  g.media = {Media{kImage, {}}};
  ASSERT_TRUE((*c)->Send(kTurns[0], g).ok());
  ASSERT_TRUE((*c)->Save(path).ok());
  auto expected = (*c)->Send(kTurns[1], greedy(6));
  ASSERT_TRUE(expected.ok());

  auto s2 = new_session();
  RestoreInfo info;
  auto c2 = Conversation::Load(*s2, path, {}, &info);
  ASSERT_TRUE(c2.ok()) << c2.status().ToString();
  EXPECT_FALSE(info.kv_restored);
  ASSERT_EQ((*c2)->history().size(), 2u);
  auto got = (*c2)->Send(kTurns[1], greedy(6));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->text, expected->text);
  EXPECT_EQ(got->stats.n_media, 1);
}

}  // namespace
}  // namespace edgellm
