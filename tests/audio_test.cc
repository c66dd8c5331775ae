// Audio in the prompt: the Ultravox v0.5 fixture pair (Llama-3.2-1B's text model and
// Whisper-large-v3-turbo's encoder with Ultravox's projector, random weights at the real
// shapes) against llama.cpp's own llama-mtmd-cli. Whisper encodes 30 s windows, so every clip
// costs a full window (~26 s on this machine's 2 cores): the tests that encode share one model
// and its encoded-media cache, and skip the sanitizer twin.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "edgellm/conversation.h"
#include "edgellm/planner.h"
#include "edgellm/session.h"
#include "gguf.h"
#include "testutil/fixtures.h"
#include "testutil/tool_run.h"

namespace edgellm {
namespace {

constexpr const char* kPreset = "ultravox-v0.5-llama-3.2-1b";
const std::string kClip = std::string(EDGELLM_TEST_SOURCE_DIR) +
                          "/third_party/llama.cpp/tools/mtmd/test-2.mp3";  // 17.4 s of speech
const std::string kImage = std::string(EDGELLM_TEST_SOURCE_DIR) +
                           "/third_party/llama.cpp/tools/mtmd/test-1.jpeg";

std::string text_model() { return testutil::synth_multimodal(kPreset, "Q8_0"); }
std::string projector() { return testutil::synth_mmproj_path(kPreset); }

Model* audio_model() {
  static std::unique_ptr<Model> model;
  if (!model) {
    LoadOptions lo;
    lo.mmproj_path = projector();
    lo.mmproj_threads = 2;
    auto m = Model::Load(text_model(), lo);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    if (!m.ok()) return nullptr;
    model = std::move(m).value();
  }
  return model.get();
}

std::unique_ptr<Session> new_session() {
  SessionOptions so;
  so.n_ctx = 1024;
  so.n_threads = 1;
  so.warmup = false;
  auto s = Session::Create(*audio_model(), so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

GenerateOptions greedy(int32_t n) {
  GenerateOptions g;
  g.temperature = 0;
  // Every guess checked: the same greedy text run after run (docs/speculative.md).
  g.speculative.adaptive = false;
  g.max_tokens = n;
  return g;
}

// The pair loads; the projector says it takes audio and not images; the checks that keep
// clip.cpp from aborting know its shapes.
TEST(AudioFixture, UltravoxPairLoadsAndTakesAudioOnly) {
  Model* m = audio_model();
  ASSERT_NE(m, nullptr);
  EXPECT_TRUE(m->info().audio);
  EXPECT_FALSE(m->info().vision);
  EXPECT_EQ(m->info().n_embd, 2048);
  EXPECT_EQ(m->info().n_vocab, 128256);
  EXPECT_GT(m->info().mmproj_bytes, 1300ull << 20);  // 637M parameters, F16

  // An image for an audio-only projector: a clear error before anything is decoded.
  auto s = new_session();
  ASSERT_NE(s, nullptr);
  GenerateOptions g = greedy(2);
  g.media = {Media{kImage, {}}};
  auto r = s->Generate("What is this?", g);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("image"), std::string::npos) << r.status().message();

  // The projector made for a 2048-wide model with SmolVLM's 576-wide text model.
  LoadOptions lo;
  lo.mmproj_path = projector();
  auto other = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"), lo);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find("projects audio to 2048-wide embeddings, but the "
                                          "text model is 576 wide"),
            std::string::npos)
      << other.status().message();
}

// Headers clip.cpp would abort on, each a clear error from the check before it.
TEST(AudioFixture, BadUltravoxHeadersAreClearErrors) {
  const std::string dir = testutil::scratch_dir("audio-proj");
  auto write = [&](const std::string& name, int stack, bool with_mlp) {
    gguf_context* out = gguf_init_empty();
    gguf_set_val_str(out, "general.architecture", "clip");
    gguf_set_val_str(out, "clip.projector_type", "ultravox");
    gguf_set_val_bool(out, "clip.has_audio_encoder", true);
    gguf_set_val_u32(out, "clip.audio.embedding_length", 1280);
    gguf_set_val_u32(out, "clip.audio.feed_forward_length", 5120);
    gguf_set_val_u32(out, "clip.audio.block_count", 32);
    gguf_set_val_u32(out, "clip.audio.attention.head_count", 20);
    gguf_set_val_u32(out, "clip.audio.num_mel_bins", 128);
    gguf_set_val_u32(out, "clip.audio.projector.stack_factor", static_cast<uint32_t>(stack));
    ggml_init_params ip{16 * ggml_tensor_overhead(), nullptr, true};
    ggml_context* ctx = ggml_init(ip);
    ggml_tensor* pos = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1280, 1500);
    ggml_set_name(pos, "a.position_embd.weight");
    gguf_add_tensor(out, pos);
    if (with_mlp) {
      ggml_tensor* a = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 1280 * 8, 4096);
      ggml_set_name(a, "mm.a.mlp.1.weight");
      gguf_add_tensor(out, a);
      ggml_tensor* b = ggml_new_tensor_2d(ctx, GGML_TYPE_F16, 2048, 2048);
      ggml_set_name(b, "mm.a.mlp.2.weight");
      gguf_add_tensor(out, b);
    }
    const std::string path = dir + "/" + name;
    EXPECT_TRUE(gguf_write_to_file(out, path.c_str(), /*only_meta=*/true));
    gguf_free(out);
    ggml_free(ctx);
    // Only the header: the data section is a hole of its size, as a truncated download's.
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + 1280 * 1500 * 4 +
                                           (with_mlp ? (1280 * 8 * 4096 + 2048 * 2048) * 2 : 0));
    return path;
  };
  auto load = [&](const std::string& path) {
    LoadOptions lo;
    lo.mmproj_path = path;
    auto m = Model::Load(text_model(), lo);
    return m.ok() ? Status::Ok() : m.status();
  };
  Status st = load(write("no-stack.gguf", 0, true));
  EXPECT_EQ(st.code(), Code::kCorruptData);
  EXPECT_NE(st.message().find("stack_factor 0"), std::string::npos) << st.message();
  st = load(write("no-mlp.gguf", 8, false));
  EXPECT_EQ(st.code(), Code::kCorruptData);
  EXPECT_NE(st.message().find("lacks Ultravox's projector"), std::string::npos) << st.message();
  st = load(write("no-blocks.gguf", 8, true));  // the blocks and convolutions are missing
  EXPECT_EQ(st.code(), Code::kCorruptData);
  EXPECT_NE(st.message().find("not the 491 of an ultravox projector with 32 blocks"),
            std::string::npos)
      << st.message();
}

// The plan counts the projector's weights and its compute buffer for a 30 s window.
TEST(AudioFixture, ThePlanCountsTheAudioProjector) {
  PlanOptions po;
  po.n_ctx = 1024;
  po.ram_bytes = 8ull << 30;
  po.mmproj_path = projector();
  auto plan = plan_memory(text_model(), po);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const uint64_t file = std::filesystem::file_size(projector());
  EXPECT_GT(plan->projector_bytes, file * 95 / 100);
  EXPECT_LT(plan->projector_bytes, file * 2);
  std::printf("plan: projector %.1f MiB (file %.1f MiB), total %.1f MiB\n",
              plan->projector_bytes / 1048576.0, file / 1048576.0, plan->total_bytes / 1048576.0);
}

using testutil::run_tool;
using testutil::trim_newlines;

// Greedy text for an audio prompt equals llama-mtmd-cli's on the same pair and clip. The CLI
// formats the turn with the model's template (without Llama 3.2's dated system block: it
// renders only the new message), which its log shows; edgellm gets that text as a raw prompt.
TEST(Audio, GreedyTextEqualsLlamaMtmdCli) {
  const testutil::CliRun ref = run_tool(std::string(EDGELLM_LLAMA_MTMD_CLI) + " -m " + text_model() +
                               " --mmproj " + projector() + " --audio " + kClip +
                               " -p 'What is said?' -n 16 --temp 0 -t 2 --no-warmup -c 1024 -v");
  ASSERT_EQ(ref.rc, 0) << ref.err.substr(ref.err.size() > 4000 ? ref.err.size() - 4000 : 0);
  const std::string formatted =
      "<|start_header_id|>user<|end_header_id|>\n\n" + std::string(media_marker()) +
      "What is said?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
  EXPECT_NE(ref.err.find("formatted_chat.prompt: " + formatted), std::string::npos)
      << "llama-mtmd-cli formatted another prompt";

  auto s = new_session();
  ASSERT_NE(s, nullptr);
  GenerateOptions g = greedy(16);
  g.speculative.max_draft = 0;  // the reference decodes one token per step: so does this side
  g.media = {Media{kClip, {}}};
  auto r = s->Generate(formatted, g);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::string want = trim_newlines(ref.out);
  EXPECT_GT(want.size(), 8u) << "the reference wrote nothing to compare";
  EXPECT_EQ(r->text, want);
  EXPECT_EQ(r->stats.n_gen, 16);
  EXPECT_EQ(r->stats.n_media, 1);
  EXPECT_EQ(r->stats.n_media_tokens, 187);  // 1500 Whisper positions stacked by 8
  EXPECT_GT(r->stats.media_decode_ms, 0);
  EXPECT_GT(r->stats.media_encode_ms, 0);
  std::printf("edgellm: audio decode %.1f ms, encode %.1f ms, prefill %.1f ms (%d positions)\n",
              r->stats.media_decode_ms, r->stats.media_encode_ms, r->stats.prefill_ms,
              r->stats.n_prompt);
}

// A conversation whose first turn carries the clip: the next turn keeps the clip's cells (no
// decode, no encode, only its own tokens prefilled).
TEST(Audio, AConversationKeepsTheClipsCells) {
  auto s = new_session();
  ASSERT_NE(s, nullptr);
  auto c = Conversation::Create(*s);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  GenerateOptions g = greedy(4);
  g.media = {Media{kClip, {}}};
  auto first = (*c)->Send("What is said in this clip?", g);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->stats.n_media_tokens, 187);
  auto second = (*c)->Send("Say it again.", greedy(4));
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->stats.n_media, 1);
  EXPECT_GT(second->stats.n_cached, 187) << "the clip's cells were not kept";
  EXPECT_EQ(second->stats.media_encode_ms, 0);
  EXPECT_EQ(second->stats.media_chunks_cached, 0) << "the clip was decoded again";
  EXPECT_LT(second->stats.n_prompt, 30);
  ASSERT_EQ((*c)->history().size(), 4u);
  EXPECT_EQ((*c)->history()[0].media.size(), 1u);
}

}  // namespace
}  // namespace edgellm
