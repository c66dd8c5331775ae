// Images in the prompt: the SmolVLM-256M-shape fixture (a llama text model and its idefics3
// vision projector, random weights) against llama.cpp's own llama-mtmd-cli.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "engine/llama_glue_mtmd.h"
#include "edgellm/planner.h"
#include "edgellm/session.h"
#include "edgellm/synth.h"
#include "gguf.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

const std::string kImage = std::string(EDGELLM_TEST_SOURCE_DIR) +
                           "/third_party/llama.cpp/tools/mtmd/test-1.jpeg";

// The sampling both sides use: random weights put every greedy step on one token
// (<end_of_utterance>), so the comparison samples at temperature 1 with a fixed seed instead,
// where each draw depends on the whole distribution.
constexpr uint32_t kSeed = 42;

struct ToolRun {
  int rc;
  std::string out;
};

ToolRun run_tool(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  return {p ? pclose(p) : -1, out};
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

// The projector is what llama.cpp's converter writes for SmolVLM-256M: clip.cpp reads each
// key with one exact type (another aborts the process), 198 tensors, 93.5M parameters.
TEST(MultimodalFixture, SmolVlmProjectorHasTheConvertersKeysAndTensors) {
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  ASSERT_FALSE(text.empty());
  gguf_init_params ip{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* g = gguf_init_from_file(testutil::synth_mmproj_path("smolvlm-256m").c_str(), ip);
  ASSERT_NE(g, nullptr);
  auto type_of = [&](const char* key) {
    const int64_t id = gguf_find_key(g, key);
    return id < 0 ? GGUF_TYPE_COUNT : gguf_get_kv_type(g, id);
  };
  EXPECT_EQ(std::string(gguf_get_val_str(g, gguf_find_key(g, "clip.projector_type"))), "idefics3");
  for (const char* k : {"clip.vision.image_size", "clip.vision.patch_size",
                        "clip.vision.embedding_length", "clip.vision.feed_forward_length",
                        "clip.vision.block_count", "clip.vision.attention.head_count",
                        "clip.vision.projection_dim", "clip.vision.projector.scale_factor",
                        "clip.vision.preproc_image_size"}) {
    EXPECT_EQ(type_of(k), GGUF_TYPE_UINT32) << k;
  }
  EXPECT_EQ(type_of("clip.vision.attention.layer_norm_epsilon"), GGUF_TYPE_FLOAT32);
  EXPECT_EQ(type_of("clip.has_vision_encoder"), GGUF_TYPE_BOOL);
  EXPECT_EQ(gguf_get_arr_type(g, gguf_find_key(g, "clip.vision.image_mean")), GGUF_TYPE_FLOAT32);
  EXPECT_EQ(gguf_get_n_tensors(g), 198);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "v.patch_embd.weight")), GGML_TYPE_F32);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "v.blk.0.attn_q.weight")), GGML_TYPE_F16);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "v.blk.0.attn_q.bias")), GGML_TYPE_F32);
  EXPECT_EQ(gguf_get_tensor_type(g, gguf_find_tensor(g, "mm.model.fc.weight")), GGML_TYPE_F16);
  gguf_free(g);
}

// llama.cpp's own multimodal CLI loads the pair and generates from test-1.jpeg. At SmolVLM's
// own settings an image is 4x4 tiles of 512 and an overview: 17 encoder passes of ~3.3 s each
// on this machine's 2 threads. With at most 64 image tokens it is one tile and the overview.
TEST(MultimodalFixture, LlamaMtmdCliRunsTheSmolVlmPair) {
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  ASSERT_FALSE(text.empty());
  const ToolRun r = run_tool(std::string(EDGELLM_LLAMA_MTMD_CLI) + " -m " + text + " --mmproj " +
                             testutil::synth_mmproj_path("smolvlm-256m") + " --image " + kImage +
                             " -p 'What is in the image?' -n 4 --temp 0 -t 2 --no-warmup -c 2048"
                             " --image-max-tokens 64");
  ASSERT_EQ(r.rc, 0) << r.out.substr(r.out.size() > 4000 ? r.out.size() - 4000 : 0);
  EXPECT_EQ(count(r.out, "mtmd batch encoding done"), 2u) << r.out.substr(0, 6000);
  // The template it formats with is the fixture's: SmolVLM's turns.
  EXPECT_NE(r.out.find("User: How are you?<end_of_utterance>\nAssistant:"), std::string::npos);
}

// Text through edgellm for `prompt` with `media` (SmolVLM's pair at 64 image tokens), sampled
// at temperature 1 with kSeed.
Result<Generation> edgellm_generate(const std::string& prompt, std::vector<Media> media,
                                    int32_t max_tokens, bool ignore_eos = false,
                                    Model** keep = nullptr) {
  static std::unique_ptr<Model> model;
  if (!model) {
    LoadOptions lo;
    lo.mmproj_path = testutil::synth_mmproj_path("smolvlm-256m");
    lo.image_max_tokens = 64;
    lo.mmproj_threads = 2;
    auto m = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"), lo);
    if (!m.ok()) return m.status();
    model = std::move(m).value();
  }
  if (keep) *keep = model.get();
  SessionOptions so;
  so.n_ctx = 2048;
  so.n_threads = 1;
  so.warmup = false;
  auto s = Session::Create(*model, so);
  if (!s.ok()) return s.status();
  GenerateOptions g;
  g.chat = true;
  g.temperature = 1.0f;
  g.top_k = 0;
  g.top_p = 1.0f;
  g.min_p = 0;
  g.seed = kSeed;
  g.max_tokens = max_tokens;
  g.ignore_eos = ignore_eos;
  g.media = std::move(media);
  return (*s)->Generate(prompt, g);
}

// The reference: llama.cpp's own path for the same prompt, as llama-mtmd-cli takes it (the
// formatted chat text tokenized by mtmd with the image, evaluated by mtmd_helper_eval_chunks
// with a batch of 2048), then `n` tokens drawn with edgellm's sampler chain for temperature 1,
// end-of-generation ignored: their text.
std::string reference_sampled(const std::string& formatted, const std::string& image, int n) {
  llama_model_params mp = llama_model_default_params();
  llama_model* model =
      llama_model_load_from_file(testutil::synth_multimodal("smolvlm-256m", "Q8_0").c_str(), mp);
  EXPECT_NE(model, nullptr);
  if (!model) return {};
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 2048;
  cp.n_batch = 2048;
  cp.n_threads = cp.n_threads_batch = 1;
  llama_context* ctx = llama_init_from_model(model, cp);
  mtmd_context_params mcp = mtmd_context_params_default();
  mcp.use_gpu = false;
  mcp.n_threads = 1;
  mcp.warmup = false;
  mcp.print_timings = false;
  mcp.image_max_tokens = 64;
  mtmd_context* mctx =
      mtmd_init_from_file(testutil::synth_mmproj_path("smolvlm-256m").c_str(), model, mcp);
  EXPECT_NE(mctx, nullptr);
  mtmd_helper_bitmap_wrapper w =
      mtmd_helper_bitmap_init_from_file(mctx, image.c_str(), false, mtmd_helper_init_opt_default());
  mtmd_input_chunks* chunks = mtmd_input_chunks_init();
  mtmd_input_text text{formatted.c_str(), formatted.size(), true, true};
  const mtmd_bitmap* bm = w.bitmap;
  EXPECT_EQ(mtmd_tokenize(mctx, chunks, &text, &bm, 1), 0);
  llama_pos n_past = 0;
  EXPECT_EQ(mtmd_helper_eval_chunks(mctx, ctx, chunks, 0, 0, 2048, true, &n_past), 0);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  // edgellm's chain for temperature 1, top_k 0, top_p 1, min_p 0 (llama_glue.cc).
  llama_sampler* chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
  llama_sampler_chain_add(chain, llama_sampler_init_temp(1.0f));
  llama_sampler_chain_add(chain, llama_sampler_init_dist(kSeed));
  std::string out;
  for (int i = 0; i < n; ++i) {
    llama_token tok = llama_sampler_sample(chain, ctx, -1);
    char piece[256];
    const int len = llama_token_to_piece(vocab, tok, piece, sizeof piece, 0, false);
    if (len > 0) out.append(piece, static_cast<size_t>(len));
    EXPECT_EQ(llama_decode(ctx, llama_batch_get_one(&tok, 1)), 0);
  }
  llama_sampler_free(chain);
  mtmd_input_chunks_free(chunks);
  mtmd_bitmap_free(w.bitmap);
  mtmd_free(mctx);
  llama_free(ctx);
  llama_model_free(model);
  return out;
}

// Text from an image prompt equals llama.cpp's own evaluation of the same prompt (mtmd's
// tokenizer, encoder and chunk evaluation), drawn with the same sampler and seed.
TEST(Multimodal, TextEqualsLlamaCppsOwnMediaPath) {
  const std::string prompt = "What is in the image?";
  auto g = edgellm_generate(prompt, {Media{kImage, {}}}, 16, /*ignore_eos=*/true);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  // SmolVLM's turn format with the marker where mtmd puts the image.
  const std::string formatted = "<|im_start|>User: " + std::string(media_marker()) + prompt +
                                "<end_of_utterance>\nAssistant:";
  const std::string ref = reference_sampled(formatted, kImage, 16);
  EXPECT_GT(ref.size(), 4u) << "the reference wrote nothing to compare: [" << ref << "]";
  // edgellm streams valid UTF-8 only: the reference's bytes through the same decoder.
  std::string ref_utf8;
  Utf8Decoder dec;
  dec.Push(ref, &ref_utf8);
  dec.Finish(&ref_utf8);
  EXPECT_EQ(g->text, ref_utf8);
  EXPECT_EQ(g->stats.n_gen, 16);
  EXPECT_EQ(g->stats.n_media, 1);
  EXPECT_EQ(g->stats.n_media_tokens, 128);  // one 512-pixel tile and the overview, 64 each
  EXPECT_GT(g->stats.media_encode_ms, 0);
  EXPECT_GT(g->stats.media_decode_ms, 0);
  std::printf("edgellm: media decode %.1f ms, encode %.1f ms, prefill %.1f ms (%d positions)\n",
              g->stats.media_decode_ms, g->stats.media_encode_ms, g->stats.prefill_ms,
              g->stats.n_prompt);
}

std::string file_bytes(const std::string& path) { return testutil::read_file(path); }

Status media_error(std::vector<Media> media, const std::string& prompt = "What is this?") {
  auto g = edgellm_generate(prompt, std::move(media), 2);
  return g.ok() ? Status::Ok() : g.status();
}

// The same image as a file or as bytes is the same prompt; the second time its encoded
// chunks come from the model's cache, and the text is the same.
TEST(Multimodal, BytesEqualAPathAndASecondRequestTakesTheEncodedCache) {
  auto a = edgellm_generate("Describe it.", {Media{kImage, {}}}, 8);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const std::string raw = file_bytes(kImage);
  auto b = edgellm_generate("Describe it.", {Media{"", std::vector<uint8_t>(raw.begin(), raw.end())}}, 8);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(a->text, b->text);
  EXPECT_EQ(b->stats.media_chunks_cached, 2);
  EXPECT_EQ(b->stats.media_encode_ms, 0);
  EXPECT_EQ(b->stats.n_media_tokens, a->stats.n_media_tokens);
}

// Bad media and bad requests: each a clear error before anything is encoded, nothing crashes.
TEST(Multimodal, BadMediaAreClearErrors) {
  const std::string dir = testutil::scratch_dir("mm-bad");
  Status st = media_error({Media{dir + "/missing.jpg", {}}});
  EXPECT_EQ(st.code(), Code::kNotFound) << st.ToString();
  testutil::write_file(dir + "/empty.jpg", "");
  st = media_error({Media{dir + "/empty.jpg", {}}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("is empty"), std::string::npos) << st.message();
  const std::string jpeg = file_bytes(kImage);
  // Cut files: stb would decode the missing part as grey.
  testutil::write_file(dir + "/cut.jpg", jpeg.substr(0, jpeg.size() / 2));
  st = media_error({Media{dir + "/cut.jpg", {}}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.ToString();
  EXPECT_NE(st.message().find("JPEG that is cut short"), std::string::npos) << st.message();
  testutil::write_file(dir + "/cut-early.jpg", jpeg.substr(0, 600));  // not even a scan
  st = media_error({Media{dir + "/cut-early.jpg", {}}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument) << st.ToString();
  std::vector<uint8_t> noise(5000);
  for (size_t i = 0; i < noise.size(); ++i) noise[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  st = media_error({Media{"", noise}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("neither an image"), std::string::npos) << st.message();
  // A PNG whose header claims 30,000 x 30,000 pixels: refused from the header, never decoded.
  std::string png = "\x89PNG\r\n\x1a\n";
  png += std::string("\0\0\0\x0d", 4) + "IHDR";
  png += std::string("\0\0\x75\x30\0\0\x75\x30\x08\x02\0\0\0", 13) + "CRC!";
  png += std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12);
  st = media_error({Media{"", std::vector<uint8_t>(png.begin(), png.end())}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("PNG of 30000 x 30000 pixels"), std::string::npos) << st.message();
  // Audio to a vision-only projector.
  const std::string mp3 = std::string(EDGELLM_TEST_SOURCE_DIR) + "/third_party/llama.cpp/tools/mtmd/test-2.mp3";
  st = media_error({Media{mp3, {}}});
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("images only"), std::string::npos) << st.message();
  // Markers that do not match the media.
  st = media_error({Media{kImage, {}}}, std::string(media_marker()) + " and " + media_marker());
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("2 media markers"), std::string::npos) << st.message();
  // Too many items.
  st = media_error(std::vector<Media>(40, Media{kImage, {}}));
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("at most 32"), std::string::npos) << st.message();
  // The model still works.
  auto g = edgellm_generate("Describe it.", {Media{kImage, {}}}, 2);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
}

// A model without a projector, a file that is not a projector, a projector for another text
// model, and a projector whose key has the wrong type (clip.cpp would abort on it).
TEST(Multimodal, BadProjectorsAreClearErrors) {
  auto tiny = Model::Load(testutil::synth_model("tiny", "Q8_0"));
  ASSERT_TRUE(tiny.ok());
  auto s = Session::Create(**tiny, {});
  ASSERT_TRUE(s.ok());
  GenerateOptions g;
  g.max_tokens = 2;
  g.media = {Media{kImage, {}}};
  auto r = (*s)->Generate("What is this?", g);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("--mmproj"), std::string::npos) << r.status().message();

  LoadOptions lo;
  lo.mmproj_path = testutil::synth_model("tiny", "Q8_0");  // a text model
  auto m = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"), lo);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not a projector"), std::string::npos) << m.status().message();

  lo.mmproj_path = testutil::synth_mmproj_path("smolvlm-256m");  // made for 576, tiny is 256
  m = Model::Load(testutil::synth_model("tiny", "Q8_0"), lo);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("576-wide embeddings, but the text model is 256 wide"),
            std::string::npos) << m.status().message();

  const std::string bad = testutil::scratch_dir("mm-proj") + "/bad-type.gguf";
  gguf_context* out = gguf_init_empty();
  gguf_set_val_str(out, "general.architecture", "clip");
  gguf_set_val_str(out, "clip.projector_type", "idefics3");
  gguf_set_val_i32(out, "clip.vision.image_size", 512);  // clip.cpp reads a u32: an abort
  ASSERT_TRUE(gguf_write_to_file(out, bad.c_str(), /*only_meta=*/false));
  gguf_free(out);
  lo.mmproj_path = bad;
  m = Model::Load(testutil::synth_multimodal("smolvlm-256m", "Q8_0"), lo);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), Code::kCorruptData);
  EXPECT_NE(m.status().message().find("clip.vision.image_size is i32, not u32"), std::string::npos)
      << m.status().message();
}

// `edgellm run --mmproj --image --json` reports the media stats; --image alone is refused.
TEST(Multimodal, RunWithAnImageFromTheCli) {
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  const auto r = testutil::run_cli("run -m " + text + " --mmproj " +
                                   testutil::synth_mmproj_path("smolvlm-256m") + " --image " +
                                   kImage + " --image-max-tokens 64 --chat -p 'What is it?' -n 4 "
                                   "--temp 0 --ctx 1024 --threads 2 --no-warmup --json -q");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["n_media"], 1);
  EXPECT_EQ(j["n_media_tokens"], 128);
  EXPECT_GT(j["media_encode_ms"].get<double>(), 0);
  EXPECT_GT(j["n_prompt"].get<int>(), 128);
  const auto bad = testutil::run_cli("run -m " + text + " --image " + kImage + " -p hi -n 2 -q");
  EXPECT_NE(bad.rc, 0);
  EXPECT_NE(bad.err.find("pass --mmproj FILE"), std::string::npos) << bad.err;
}

// WAV bytes: `seconds` of a 440 Hz tone at `rate` Hz, 16-bit mono; the header's data size
// claims `claim_seconds` instead when that is not 0.
std::vector<uint8_t> wav(double seconds, int rate, double claim_seconds = 0) {
  const uint32_t n = static_cast<uint32_t>(seconds * rate);
  const uint32_t data = static_cast<uint32_t>((claim_seconds > 0 ? claim_seconds : seconds) * rate * 2);
  std::vector<uint8_t> b;
  auto put = [&](const void* p, size_t k) {
    b.insert(b.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + k);
  };
  auto u32 = [&](uint32_t v) { put(&v, 4); };
  auto u16 = [&](uint16_t v) { put(&v, 2); };
  put("RIFF", 4);
  u32(36 + data);
  put("WAVEfmt ", 8);
  u32(16);
  u16(1);
  u16(1);
  u32(static_cast<uint32_t>(rate));
  u32(static_cast<uint32_t>(rate) * 2);
  u16(2);
  u16(16);
  put("data", 4);
  u32(data);
  for (uint32_t i = 0; i < n; ++i) {
    u16(static_cast<uint16_t>(static_cast<int16_t>(8000 * std::sin(i * 2 * 3.14159265 * 440 / rate))));
  }
  return b;
}

// Audio is decoded in bounded blocks: a clip within the limit comes back whole at 16 kHz; one
// longer than the limit is refused naming the limit, and no more than the limit is decoded;
// a header that claims hours it does not hold allocates nothing for them.
TEST(Multimodal, AudioIsDecodedWithinItsLengthBound) {
  const std::vector<uint8_t> tone = wav(2.0, 8000);
  auto pcm = engine::decode_audio_pcm(tone.data(), tone.size(), 16000, 600);
  ASSERT_TRUE(pcm.ok()) << pcm.status().ToString();
  EXPECT_NEAR(static_cast<double>(pcm->size()), 32000, 200);  // resampled to 16 kHz

  const std::vector<uint8_t> long_clip = wav(12.0, 8000);
  auto refused = engine::decode_audio_pcm(long_clip.data(), long_clip.size(), 16000, 10);
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("limit of 10 s"), std::string::npos)
      << refused.status().ToString();

  // Five hours claimed, half a second present: what is there is decoded, and nothing is
  // allocated for the claim (the decoder reads blocks, never the header's length at once).
  const std::vector<uint8_t> liar = wav(0.5, 16000, 5 * 3600);
  auto claimed = engine::decode_audio_pcm(liar.data(), liar.size(), 16000, 600);
  ASSERT_TRUE(claimed.ok()) << claimed.status().ToString();
  EXPECT_EQ(claimed->size(), 8000u);

  const std::string mp3 = testutil::read_file(std::string(EDGELLM_TEST_SOURCE_DIR) +
                                              "/third_party/llama.cpp/tools/mtmd/test-2.mp3");
  auto music = engine::decode_audio_pcm(reinterpret_cast<const uint8_t*>(mp3.data()), mp3.size(),
                                        16000, 600);
  ASSERT_TRUE(music.ok()) << music.status().ToString();
  EXPECT_GT(music->size(), 16000u);
  auto cut = engine::decode_audio_pcm(reinterpret_cast<const uint8_t*>(mp3.data()), mp3.size(),
                                      16000, 1);
  EXPECT_EQ(cut.status().code(), Code::kInvalidArgument);
  const uint8_t noise[] = {'R', 'I', 'F', 'F', 1, 2, 3, 4, 'W', 'A', 'V', 'E', 9, 9, 9};
  EXPECT_FALSE(engine::decode_audio_pcm(noise, sizeof noise, 16000, 600).ok());
  std::printf("test-2.mp3: %.1f s at 16 kHz\n", music->size() / 16000.0);
}

// The memory plan counts the projector: its weights and its encoder's compute buffer (mtmd's
// dry run), so a budget the text model alone fits can be one the pair does not.
TEST(Multimodal, ThePlanCountsTheProjector) {
  const std::string text = testutil::synth_multimodal("smolvlm-256m", "Q8_0");
  const std::string mmproj = testutil::synth_mmproj_path("smolvlm-256m");
  PlanOptions po;
  po.n_ctx = 2048;
  po.ram_bytes = 8ull << 30;
  auto alone = plan_memory(text, po);
  ASSERT_TRUE(alone.ok()) << alone.status().ToString();
  EXPECT_EQ(alone->projector_bytes, 0u);
  po.mmproj_path = mmproj;
  po.image_max_tokens = 64;
  auto pair = plan_memory(text, po);
  ASSERT_TRUE(pair.ok()) << pair.status().ToString();
  const uint64_t file = std::filesystem::file_size(mmproj);
  EXPECT_GT(pair->projector_bytes, file * 95 / 100) << "the weights alone are the file's size";
  EXPECT_LT(pair->projector_bytes, file * 4) << pair->projector_bytes;
  EXPECT_EQ(pair->total_bytes, alone->total_bytes + pair->projector_bytes);
  std::printf("plan: text %.1f MiB, projector %.1f MiB (file %.1f MiB)\n",
              alone->total_bytes / 1048576.0, pair->projector_bytes / 1048576.0, file / 1048576.0);

  // A device whose budget (40% of RAM) holds the text model but not the pair.
  po.ram_bytes = static_cast<uint64_t>((alone->total_bytes + pair->projector_bytes / 2) / 0.4);
  auto tight = plan_memory(text, po);
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->fits);
  po.mmproj_path.clear();
  auto tight_alone = plan_memory(text, po);
  ASSERT_TRUE(tight_alone.ok());
  EXPECT_TRUE(tight_alone->fits);

  // A file that is no projector is an error, not an abort in clip.cpp.
  po.mmproj_path = text;
  auto bad = plan_memory(text, po);
  EXPECT_FALSE(bad.ok());
  const auto cli = testutil::run_cli("plan " + text + " --mmproj " + mmproj +
                                     " --image-max-tokens 64 --ctx 1024 --json");
  ASSERT_EQ(cli.rc, 0) << cli.err;
  EXPECT_GT(nlohmann::json::parse(cli.out)["projector_bytes"].get<uint64_t>(), file * 95 / 100);
}

TEST(MultimodalFixture, AProjectorOnlyForPresetsWithOneAndNotOverTheModel) {
  const std::string dir = testutil::scratch_dir("mm-synth");
  SynthOptions o;
  o.preset = "tiny";
  o.type = "F16";
  o.output = dir + "/tiny.gguf";
  o.mmproj_output = dir + "/mmproj.gguf";
  o.vocab_path = testutil::vocab_path();
  Status st = synth_model(o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("preset tiny has no projector"), std::string::npos) << st.message();
  o.preset = "smolvlm-256m";
  o.mmproj_output = o.output;
  st = synth_model(o);
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  EXPECT_NE(st.message().find("cannot both be written"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(o.output));
  EXPECT_TRUE(std::filesystem::is_empty(dir));
}

}  // namespace
}  // namespace edgellm
