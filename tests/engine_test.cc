// Engine behaviour against real libllama on a generated fixture (tiny preset, real Qwen2 vocab).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
extern "C" void __sanitizer_purge_allocator(void);  // sanitizer/allocator_interface.h
#endif

#include "core/utf8.h"
#include "edgellm/edgellm.h"
#include "engine/streamer.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

using std::chrono::steady_clock;

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = testutil::synth_model("tiny", "Q8_0");
    ASSERT_FALSE(path_.empty());
    auto m = Model::Load(path_);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    model_ = std::move(m.value()).release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static std::unique_ptr<Session> NewSession(SessionOptions so = {}) {
    so.n_threads = 1;  // two ctest processes share two cores: one thread each
    auto s = Session::Create(*model_, so);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s.value()) : nullptr;
  }

  static GenerateOptions Greedy(int n) {
    GenerateOptions g;
    g.temperature = 0;
    // Every guess checked: the same greedy text run after run (docs/speculative.md).
    g.speculative.adaptive = false;
    g.max_tokens = n;
    return g;
  }

  // A prompt of roughly `words` words mixing English and Chinese.
  static std::string LongPrompt(int words) {
    std::string p;
    for (int i = 0; i < words; ++i) p += (i % 3 == 0) ? "端侧模型 " : "token" + std::to_string(i) + " ";
    return p;
  }

  static inline std::string path_;
  static inline Model* model_ = nullptr;
};

TEST_F(EngineTest, InfoReportsShapes) {
  const ModelInfo& i = model_->info();
  EXPECT_EQ(i.arch, "qwen2");
  EXPECT_EQ(i.n_layer, 2);
  EXPECT_EQ(i.n_embd, 256);
  EXPECT_EQ(i.n_head, 4);
  EXPECT_EQ(i.n_head_kv, 2);
  EXPECT_EQ(i.n_vocab, 151936);
  EXPECT_EQ(i.vocab_type, "bpe");
  EXPECT_EQ(i.quant, "Q8_0");
  EXPECT_EQ(i.n_ctx_train, 32768);
  EXPECT_TRUE(i.has_chat_template);
  EXPECT_GT(i.n_params, 39'000'000u);
  EXPECT_GT(i.file_bytes, i.weights_bytes);
  EXPECT_EQ(i.load_mode, LoadMode::kMmap);  // 40 MiB is under the 500 MiB threshold
}

TEST_F(EngineTest, MmapAndReadLoadsGiveSameGreedyOutput) {
  std::string outs[2];
  int k = 0;
  for (LoadMode mode : {LoadMode::kMmap, LoadMode::kRead}) {
    LoadOptions lo;
    lo.mode = mode;
    auto m = Model::Load(path_, lo);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    EXPECT_EQ((*m)->info().load_mode, mode);
    auto s = Session::Create(**m, {});
    ASSERT_TRUE(s.ok());
    auto g = (*s)->Generate("The quick brown fox", Greedy(24));
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    EXPECT_EQ(g->stats.n_gen, 24);
    outs[k++] = g->text;
  }
  EXPECT_FALSE(outs[0].empty());
  EXPECT_EQ(outs[0], outs[1]);
}

// Resident bytes now; under ASan after draining its quarantine of freed blocks, so the
// figure shows what the production allocator would hold.
int64_t settled_rss() {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_purge_allocator();
#endif
  return current_rss_bytes();
}

TEST_F(EngineTest, MetadataOnlyLoadHasInfoButNoSession) {
  LoadOptions lo;
  lo.metadata_only = true;
  const int64_t rss0 = settled_rss();
  auto m = Model::Load(path_, lo);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->info().n_params, model_->info().n_params);
  EXPECT_EQ((*m)->info().n_layer, 2);
  EXPECT_TRUE((*m)->info().metadata_only);
  const int64_t meta_delta = settled_rss() - rss0;
  LoadOptions read;
  read.mode = LoadMode::kRead;
  const int64_t rss1 = settled_rss();
  auto full = Model::Load(path_, read);
  ASSERT_TRUE(full.ok());
  const int64_t full_delta = settled_rss() - rss1;
  // A full read brings in ~40 MiB of weights that the metadata-only load never touched.
  EXPECT_GT(full_delta, meta_delta + (30 << 20)) << meta_delta << " vs " << full_delta;
  auto tokens = (*m)->Tokenize("hello world", false);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ(tokens->size(), 2u);
  auto s = Session::Create(**m, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
}

TEST_F(EngineTest, VocabOnlyLoadTokenizesAndRefusesSessions) {
  LoadOptions lo;
  lo.vocab_only = true;
  for (const std::string& p : {path_, testutil::vocab_path()}) {
    auto m = Model::Load(p, lo);
    ASSERT_TRUE(m.ok()) << p << ": " << m.status().ToString();
    EXPECT_EQ((*m)->info().n_vocab, p == path_ ? 151936 : (*m)->info().n_vocab);
    EXPECT_EQ((*m)->info().n_layer, 0);
    auto t = (*m)->Tokenize("hello world", false);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->size(), 2u);
    EXPECT_FALSE(Session::Create(**m, {}).ok());
  }
}

TEST_F(EngineTest, AutoLoadModeFollowsThreshold) {
  LoadOptions lo;
  lo.mmap_threshold_bytes = 1024;  // the fixture is far larger: plain reads
  auto m = Model::Load(path_, lo);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->info().load_mode, LoadMode::kRead);
}

TEST_F(EngineTest, ChunkedPrefillMatchesOneShot) {
  const std::string prompt = LongPrompt(120);
  std::vector<std::string> outs;
  for (int nb : {512, 32, 8}) {
    SessionOptions so;
    so.n_batch = nb;
    so.n_ctx = 1024;
    auto s = NewSession(so);
    ASSERT_TRUE(s);
    int chunks = 0;
    GenerateOptions g = Greedy(16);
    g.on_prefill = [&](int32_t, int32_t) {
      ++chunks;
      return true;
    };
    auto r = s->Generate(prompt, g);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_LT(r->stats.n_prompt, 512);
    EXPECT_EQ(chunks, (r->stats.n_prompt + nb - 1) / nb) << "n_batch " << nb;
    outs.push_back(r->text);
  }
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
}

TEST_F(EngineTest, StreamedPiecesAreValidUtf8AndReassembleExactly) {
  auto s = NewSession();
  ASSERT_TRUE(s);
  for (const char* prompt : {"请用中文介绍一下端侧大模型的内存优化。", "Emoji time 🙂👍🏽 and 日本語"}) {
    GenerateOptions g;
    g.temperature = 1.5f;  // wander over the vocabulary, byte-level tokens included
    g.top_k = 0;
    g.top_p = 1;
    g.min_p = 0;
    g.seed = 42;
    g.max_tokens = 200;
    g.stream_every_tokens = 1;
    std::string joined;
    int pieces = 0;
    auto r = s->Generate(prompt, g, [&](std::string_view p) {
      EXPECT_TRUE(is_valid_utf8(p)) << "piece " << pieces;
      EXPECT_FALSE(p.empty());
      joined += p;
      ++pieces;
      return true;
    });
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(joined, r->text);
    EXPECT_TRUE(is_valid_utf8(r->text));
    EXPECT_GT(pieces, 1);
  }
}

TEST_F(EngineTest, ByteLevelTokensOfChineseAndEmojiStreamWhole) {
  // The real Qwen2 vocabulary splits some characters over several byte tokens.
  const std::string text = "端侧大模型：内存、功耗与散热。罕见字𪚥𠀋龘靐齉，表情🫠🪿🧑‍🚀。";
  auto toks = model_->Tokenize(text, false);
  ASSERT_TRUE(toks.ok());
  int partial = 0;
  std::string raw;
  for (int32_t t : *toks) {
    const std::string b = model_->TokenBytes(t);
    if (!is_valid_utf8(b)) ++partial;
    raw += b;
  }
  ASSERT_EQ(raw, text);
  ASSERT_GT(partial, 0) << "expected some tokens to carry incomplete UTF-8";
  std::string joined;
  TextSink sink = [&](std::string_view p) {
    EXPECT_TRUE(is_valid_utf8(p));
    joined += p;
    return true;
  };
  TextStreamer st(sink, {}, 1, 0);
  for (int32_t t : *toks) ASSERT_TRUE(st.Push(model_->TokenBytes(t)));
  ASSERT_TRUE(st.Finish());
  EXPECT_EQ(joined, text);
}

TEST_F(EngineTest, StopStringEndsGeneration) {
  auto s = NewSession();
  auto full = s->Generate("Once upon a time", Greedy(40));
  ASSERT_TRUE(full.ok());
  ASSERT_GT(full->text.size(), 12u);
  // Stop at a piece of text that appears after the first few characters.
  const std::string stop = full->text.substr(full->text.size() / 2, 3);
  GenerateOptions g = Greedy(40);
  g.stop = {stop};
  auto r = s->Generate("Once upon a time", g);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, FinishReason::kStop);
  EXPECT_EQ(r->text, full->text.substr(0, full->text.find(stop)));
  EXPECT_EQ(r->text.find(stop), std::string::npos);
}

TEST_F(EngineTest, FinishReasons) {
  SessionOptions so;
  so.n_ctx = 64;
  auto s = NewSession(so);
  auto len = s->Generate("Hello", Greedy(5));
  ASSERT_TRUE(len.ok());
  EXPECT_EQ(len->finish_reason, FinishReason::kLength);
  EXPECT_EQ(len->stats.n_gen, 5);
  auto full = s->Generate("Hello", Greedy(1000));
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(full->finish_reason, FinishReason::kContextFull);
  // Every context slot is used; the last sampled token needs no slot of its own.
  EXPECT_EQ(full->stats.n_prompt + full->stats.n_gen, 64 + 1);
}

TEST_F(EngineTest, StatsAreFilled) {
  auto s = NewSession();
  auto r = s->Generate("Measure me", Greedy(8));
  ASSERT_TRUE(r.ok());
  const Stats& st = r->stats;
  EXPECT_GT(st.n_prompt, 0);
  EXPECT_EQ(st.n_gen, 8);
  EXPECT_GT(st.prefill_ms, 0);
  EXPECT_GT(st.prefill_tps, 0);
  EXPECT_GT(st.ttft_ms, 0);
  EXPECT_GE(st.ttft_ms, st.prefill_ms);
  EXPECT_GT(st.decode_tps, 0);
  EXPECT_GT(st.warmup_ms, 0);
  EXPECT_GT(st.load_ms, 0);
  EXPECT_GT(st.peak_rss_bytes, 40 << 20);
  EXPECT_EQ(st.n_threads, 1);  // what NewSession asks for
  SessionOptions cold;
  cold.warmup = false;
  auto c = NewSession(cold);
  EXPECT_EQ(c->warmup_ms(), 0);
}

TEST_F(EngineTest, ChatTemplateFormatsTurns) {
  auto s = NewSession();
  auto f = s->FormatChat("你好", "be brief");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_NE(f->find("<|im_start|>system\nbe brief<|im_end|>"), std::string::npos) << *f;
  EXPECT_NE(f->find("<|im_start|>user\n你好<|im_end|>"), std::string::npos);
  EXPECT_NE(f->find("<|im_start|>assistant"), std::string::npos);
  GenerateOptions g = Greedy(4);
  g.chat = true;
  auto r = s->Generate("你好", g);
  ASSERT_TRUE(r.ok());
  auto plain = s->Generate(*f, Greedy(4));
  ASSERT_TRUE(plain.ok());
  // Chat mode parses <|im_start|> as one special token; plain mode spells it out.
  EXPECT_LT(r->stats.n_prompt, plain->stats.n_prompt);
}

TEST_F(EngineTest, CancelDuringChunkedPrefill) {
  SessionOptions so;
  so.n_batch = 8;
  so.n_ctx = 4096;
  auto s = NewSession(so);
  std::mutex mu;
  std::condition_variable cv;
  bool started = false;
  std::thread canceller([&] {
    std::unique_lock<std::mutex> lk(mu);
    cv.wait(lk, [&] { return started; });
    s->Cancel();
  });
  GenerateOptions g = Greedy(16);
  g.on_prefill = [&](int32_t, int32_t) {
    {
      std::lock_guard<std::mutex> lk(mu);
      started = true;
    }
    cv.notify_one();
    return true;
  };
  auto r = s->Generate(LongPrompt(800), g);
  canceller.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(r->stats.n_gen, 0);
  EXPECT_LT(r->stats.n_prompt, 1000);
  // The session is still usable.
  auto again = s->Generate("Hello", Greedy(3));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->finish_reason, FinishReason::kLength);
}

TEST_F(EngineTest, CancelInsideOneLargeDecodeUsesAbortCallback) {
  SessionOptions so;
  so.n_batch = 4096;
  so.n_ctx = 4096;
  auto s = NewSession(so);
  const std::string prompt = LongPrompt(600);
  auto t0 = steady_clock::now();
  auto full = s->Generate(prompt, Greedy(1));
  const auto full_ms = std::chrono::duration<double, std::milli>(steady_clock::now() - t0).count();
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  ASSERT_GT(full->stats.n_prompt, 2000);
  // Cancel a fifth of the way into the same single-chunk prefill.
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(full_ms / 5));
    s->Cancel();
  });
  t0 = steady_clock::now();
  auto r = s->Generate(prompt, Greedy(1));
  const auto cancelled_ms =
      std::chrono::duration<double, std::milli>(steady_clock::now() - t0).count();
  canceller.join();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(r->stats.n_prompt, 0);  // the one chunk never completed
  EXPECT_LT(cancelled_ms, full_ms * 0.8) << "full " << full_ms;
  auto again = s->Generate("Hello", Greedy(3));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->stats.n_gen, 3);
}

TEST_F(EngineTest, CancelDuringDecode) {
  SessionOptions so;
  so.n_ctx = 4096;
  auto s = NewSession(so);
  std::atomic<bool> first{false};
  std::thread canceller([&] {
    while (!first.load()) std::this_thread::yield();
    s->Cancel();
  });
  GenerateOptions g = Greedy(3000);
  g.stream_every_tokens = 1;
  auto r = s->Generate("Tell me a long story", g, [&](std::string_view) {
    first.store(true);
    return true;
  });
  canceller.join();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, FinishReason::kCancelled);
  EXPECT_GE(r->stats.n_gen, 1);
  EXPECT_LT(r->stats.n_gen, 3000);
  auto again = s->Generate("Hello", Greedy(3));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->finish_reason, FinishReason::kLength);
}

TEST_F(EngineTest, SinkReturningFalseCancels) {
  auto s = NewSession();
  GenerateOptions g = Greedy(50);
  g.stream_every_tokens = 1;
  int calls = 0;
  auto r = s->Generate("Hi", g, [&](std::string_view) { return ++calls < 3; });
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->finish_reason, FinishReason::kCancelled);
  EXPECT_EQ(calls, 3);
}

TEST_F(EngineTest, ReleaseKvLowersRss) {
  SessionOptions so;
  so.n_ctx = 32768;  // 2 layers x 32768 x 2 x 128 x f16 = 32 MiB of KV cache
  so.warmup = false;
  auto s = NewSession(so);
  auto r = s->Generate("Hello", Greedy(4));
  ASSERT_TRUE(r.ok());
  const int64_t before = current_rss_bytes();
  s->ReleaseKv();
  EXPECT_FALSE(s->kv_allocated());
#if defined(__SANITIZE_ADDRESS__)
  // ASan quarantines freed blocks instead of returning them; drain it so RSS shows what
  // the production allocator does.
  __sanitizer_purge_allocator();
#endif
  const int64_t after = current_rss_bytes();
  EXPECT_LT(after, before - (16 << 20)) << "before " << before << " after " << after;
  auto again = s->Generate("Hello", Greedy(4));  // the context comes back on demand
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->text, r->text);
  EXPECT_TRUE(s->kv_allocated());
}

TEST_F(EngineTest, PromptLongerThanContext) {
  SessionOptions so;
  so.n_ctx = 64;
  auto s = NewSession(so);
  const std::string prompt = LongPrompt(100);
  auto r = s->Generate(prompt, Greedy(4));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
  EXPECT_NE(r.status().message().find("context holds 64"), std::string::npos)
      << r.status().message();
  GenerateOptions g = Greedy(4);
  g.truncate_prompt = true;
  auto t = s->Generate(prompt, g);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->stats.prompt_truncated);
  EXPECT_LE(t->stats.n_prompt, 48);
  EXPECT_EQ(t->stats.n_gen, 4);
}

TEST_F(EngineTest, BadGenerateArguments) {
  auto s = NewSession();
  auto empty = s->Generate("", Greedy(4));
  EXPECT_EQ(empty.status().code(), Code::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("empty"), std::string::npos);
  GenerateOptions g;
  g.max_tokens = 0;
  EXPECT_EQ(s->Generate("x", g).status().code(), Code::kInvalidArgument);
  g = {};
  g.temperature = -1;
  EXPECT_EQ(s->Generate("x", g).status().code(), Code::kInvalidArgument);
  g = {};
  g.top_p = 0;
  EXPECT_EQ(s->Generate("x", g).status().code(), Code::kInvalidArgument);
}

TEST_F(EngineTest, BadSessionOptions) {
  for (int bad : {0, -2, -100}) {
    SessionOptions so;
    so.n_threads = bad;
    auto s = Session::Create(*model_, so);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Code::kInvalidArgument);
    EXPECT_NE(s.status().message().find("n_threads"), std::string::npos);
    so = {};
    so.n_ctx = bad;
    s = Session::Create(*model_, so);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.status().message().find("n_ctx"), std::string::npos);
    so = {};
    so.n_batch = bad;
    EXPECT_FALSE(Session::Create(*model_, so).ok());
  }
  SessionOptions huge;
  huge.n_ctx = 1 << 30;
  auto s = Session::Create(*model_, huge);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("trained for"), std::string::npos);
  SessionOptions many;
  many.n_threads = 1000;  // clamped to the physical cores, never more
  auto m = Session::Create(*model_, many);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->n_threads(), physical_cores());
}

TEST_F(EngineTest, SeededSamplingIsReproducible) {
  auto s = NewSession();
  GenerateOptions g;
  g.seed = 7;
  g.max_tokens = 12;
  auto a = s->Generate("Roll the dice", g);
  auto b = s->Generate("Roll the dice", g);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->text, b->text);
}

}  // namespace
}  // namespace edgellm
