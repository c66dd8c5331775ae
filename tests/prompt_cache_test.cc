// KV state on disk: a saved conversation continues after its model and session are gone, the
// prompt cache restores a prepared system prompt, and no damaged, cut or foreign cache file is
// ever loaded: each is refused with a reason and the prefix is prefilled again with the same
// output. Runs under ASan + UBSan too (prompt_cache_test_asan).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "edgellm/conversation.h"
#include "edgellm/edgellm.h"
#include "store/sha256.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

namespace fs = std::filesystem;

const std::string kSystem =
    "你是一个运行在手机上的助手。You answer briefly, in the language of the question, and you "
    "never send data off the device. 回答要简短。";

GenerateOptions Greedy(int n) {
  GenerateOptions g;
  g.temperature = 0;
  // Every guess checked: the same greedy text run after run (docs/speculative.md).
  g.speculative.adaptive = false;
  g.max_tokens = n;
  return g;
}

struct Stack {
  std::unique_ptr<Model> model;
  std::unique_ptr<Session> session;
};

Stack Open(const std::string& path, int32_t n_ctx = 1024) {
  Stack st;
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  if (!m.ok()) return st;
  st.model = std::move(*m);
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = n_ctx;
  auto s = Session::Create(*st.model, so);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (s.ok()) st.session = std::move(*s);
  return st;
}

std::string the_file(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir)) return e.path().string();
  return "";
}

class PromptCacheTest : public ::testing::Test {
 protected:
  void SetUp() override { model_ = testutil::synth_model("tiny", "Q8_0"); }
  std::string model_;
};

TEST_F(PromptCacheTest, ASavedConversationContinuesAfterARestart) {
  const std::string file = testutil::scratch_dir("conv-save") + "/chat.kv";
  std::string expected;
  {
    Stack a = Open(model_);
    ConversationOptions co;
    co.system_prompt = kSystem;
    auto c = Conversation::Create(*a.session, co);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Send("你好", Greedy(12)).ok());
    ASSERT_TRUE((*c)->Send("What do you keep on the device?", Greedy(12)).ok());
    ASSERT_TRUE((*c)->Save(file).ok());
    auto next = (*c)->Send("第三个问题：离线能用吗？", Greedy(16));
    ASSERT_TRUE(next.ok());
    expected = next->text;
  }
  // Everything the first conversation had is gone; only the file remains.
  Stack b = Open(model_);
  RestoreInfo info;
  auto c = Conversation::Load(*b.session, file, {}, &info);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(info.kv_restored) << info.why_not;
  EXPECT_GT(info.n_tokens, 20);
  EXPECT_EQ((*c)->history().size(), 4u);
  EXPECT_EQ((*c)->options().system_prompt, kSystem);
  auto r = (*c)->Send("第三个问题：离线能用吗？", Greedy(16));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->text, expected);
  EXPECT_GT(r->stats.n_cached, info.n_tokens / 2);  // the restored cells were used

  // Another context size: the history comes back, the cells do not, and why.
  Stack other = Open(model_, 512);
  RestoreInfo info2;
  auto c2 = Conversation::Load(*other.session, file, {}, &info2);
  ASSERT_TRUE(c2.ok()) << c2.status().ToString();
  EXPECT_FALSE(info2.kv_restored);
  EXPECT_NE(info2.why_not.find("context"), std::string::npos) << info2.why_not;
  EXPECT_EQ((*c2)->history().size(), 4u);

  EXPECT_EQ(Conversation::Load(*b.session, file + ".missing").status().code(), Code::kNotFound);
}

TEST_F(PromptCacheTest, APreparedSystemPromptIsRestoredAtTheNextStart) {
  const std::string dir = testutil::scratch_dir("pcache");
  auto cache = PromptCache::Open({dir});
  ASSERT_TRUE(cache.ok()) << cache.status().ToString();
  ConversationOptions co;
  co.system_prompt = kSystem;
  co.prompt_cache = cache->get();
  std::string first_reply;
  {
    Stack a = Open(model_);
    auto c = Conversation::Create(*a.session, co);
    ASSERT_TRUE(c.ok());
    auto p = (*c)->Prepare();
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    EXPECT_FALSE(p->restored);
    EXPECT_GT(p->n_tokens, 20);
    EXPECT_GT(p->state_bytes, 0u);
    EXPECT_EQ((*cache)->entries(), 1);
    auto r = (*c)->Send("你好", Greedy(12));
    ASSERT_TRUE(r.ok());
    EXPECT_GE(r->stats.n_cached, p->n_tokens);
    first_reply = r->text;
  }
  Stack b = Open(model_);
  auto c = Conversation::Create(*b.session, co);
  ASSERT_TRUE(c.ok());
  auto p = (*c)->Prepare();
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->restored) << p->why_not_restored;
  auto r = (*c)->Send("你好", Greedy(12));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->text, first_reply);
  EXPECT_GE(r->stats.n_cached, p->n_tokens);

  // A budget for one file: preparing another prompt evicts the least recently used.
  auto small = PromptCache::Open({dir, p->state_bytes + p->state_bytes / 2});
  ASSERT_TRUE(small.ok());
  ConversationOptions other = co;
  other.system_prompt = kSystem + " Second persona.";
  other.prompt_cache = small->get();
  auto c2 = Conversation::Create(*b.session, other);
  ASSERT_TRUE(c2.ok());
  ASSERT_TRUE((*c2)->Prepare().ok());
  EXPECT_EQ((*small)->entries(), 1);
  EXPECT_LE((*small)->size_bytes(), (*small)->options().max_bytes);
  EXPECT_FALSE(PromptCache::Open({""}).ok());
}

TEST_F(PromptCacheTest, SwitchingConversationsRestoresTheOneComingBack) {
  auto cache = PromptCache::Open({testutil::scratch_dir("pcache-switch")});
  ASSERT_TRUE(cache.ok());
  // The reference: A's turns on a session of its own.
  Stack ref = Open(model_);
  ConversationOptions oa;
  oa.system_prompt = kSystem;
  auto alone = Conversation::Create(*ref.session, oa);
  ASSERT_TRUE(alone.ok());
  std::vector<std::string> expected;
  for (const char* q : {"你好", "What is kept on the device?", "离线能用吗？"}) {
    expected.push_back((*alone)->Send(q, Greedy(12))->text);
  }
  for (bool with_cache : {true, false}) {
    Stack st = Open(model_);
    ConversationOptions a = oa, b;
    b.system_prompt = "Another persona entirely. 另一个角色。";
    if (with_cache) a.prompt_cache = b.prompt_cache = cache->get();
    auto ca = Conversation::Create(*st.session, a);
    auto cb = Conversation::Create(*st.session, b);
    ASSERT_TRUE(ca.ok() && cb.ok());
    EXPECT_EQ((*ca)->Send("你好", Greedy(12))->text, expected[0]);
    EXPECT_EQ((*ca)->Send("What is kept on the device?", Greedy(12))->text, expected[1]);
    ASSERT_TRUE((*cb)->Send("B's question", Greedy(12)).ok());  // takes the cache over
    auto back = (*ca)->Send("离线能用吗？", Greedy(12));
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->text, expected[2]) << "with cache " << with_cache;
    const int32_t total = back->stats.n_cached + back->stats.n_prompt;
    if (with_cache) {
      EXPECT_GT(back->stats.n_cached, total / 2);  // A's cells came back from the cache
    } else {
      EXPECT_LT(back->stats.n_cached, total / 2);  // A's history was prefilled again
    }
  }
}

// One way to damage a valid cache file.
struct Damage {
  std::string name;
  std::function<void(std::string&)> apply;
};

// Rewrites a field of the header and its checksum, as a file made elsewhere would carry.
void rewrite_string_field(std::string& f, int index, const std::string& value) {
  // Fields after the 20-byte prefix: identity, model bytes (u64), n_ctx (u32), kv type,
  // loras, build, ...: strings are a u64 length and bytes.
  size_t pos = 20;
  auto skip_str = [&] {
    uint64_t n = 0;
    std::memcpy(&n, f.data() + pos, 8);
    pos += 8 + n;
  };
  std::vector<size_t> starts;
  starts.push_back(pos);  // 0 identity
  skip_str();
  pos += 8 + 4;
  starts.push_back(pos);  // 1 kv type
  skip_str();
  starts.push_back(pos);  // 2 loras
  skip_str();
  starts.push_back(pos);  // 3 build
  const size_t at = starts[static_cast<size_t>(index)];
  uint64_t old_len = 0;
  std::memcpy(&old_len, f.data() + at, 8);
  uint64_t header = 0;
  std::memcpy(&header, f.data() + 12, 8);
  std::string len(8, '\0');
  const uint64_t n = value.size();
  std::memcpy(len.data(), &n, 8);
  f.replace(at, 8 + old_len, len + value);
  header = header - old_len + n;
  std::memcpy(f.data() + 12, &header, 8);
  const size_t sum_at = header - 72;
  const std::string sum = store::sha256_hex(f.data(), sum_at);
  f.replace(sum_at + 8, 64, sum);
}

TEST_F(PromptCacheTest, EveryDamagedCacheFileIsRefusedAndRecomputed) {
  const std::string dir = testutil::scratch_dir("pcache-damage");
  const std::string conv_dir = testutil::scratch_dir("pcache-damage-conv");
  ConversationOptions co;
  co.system_prompt = kSystem;
  // The reference: no cache at all.
  std::string expected;
  {
    Stack a = Open(model_);
    auto c = Conversation::Create(*a.session, co);
    auto r = (*c)->Send("你好", Greedy(12));
    ASSERT_TRUE(r.ok());
    expected = r->text;
  }
  auto cache = PromptCache::Open({dir});
  ASSERT_TRUE(cache.ok());
  co.prompt_cache = cache->get();
  std::string good_path, good;
  {
    Stack a = Open(model_);
    auto c = Conversation::Create(*a.session, co);
    ASSERT_TRUE((*c)->Prepare().ok());
    good_path = the_file(dir);
    good = testutil::read_file(good_path);
  }
  ASSERT_GT(good.size(), 1000u);
  uint64_t header = 0;
  std::memcpy(&header, good.data() + 12, 8);
  ASSERT_LT(header, good.size());

  std::vector<Damage> corpus = {
      {"empty", [](std::string& f) { f.clear(); }},
      {"one byte", [](std::string& f) { f.resize(1); }},
      {"magic only", [](std::string& f) { f.resize(8); }},
      {"cut in the prefix", [](std::string& f) { f.resize(19); }},
      {"prefix only", [](std::string& f) { f.resize(20); }},
      {"cut in the header", [&](std::string& f) { f.resize(header / 2); }},
      {"cut before the checksum", [&](std::string& f) { f.resize(header - 1); }},
      {"header only", [&](std::string& f) { f.resize(header); }},
      {"cut in the cells", [&](std::string& f) { f.resize(header + (f.size() - header) / 2); }},
      {"one byte short", [](std::string& f) { f.pop_back(); }},
      {"one byte more", [](std::string& f) { f.push_back('x'); }},
      {"bad magic", [](std::string& f) { f[0] = 'X'; }},
      {"newer version", [](std::string& f) { f[8] = 2; }},
      {"header size huge", [](std::string& f) { std::memset(f.data() + 12, 0x7f, 8); }},
      {"header size zero", [](std::string& f) { std::memset(f.data() + 12, 0, 8); }},
      {"header size past the end",
       [](std::string& f) {
         const uint64_t n = f.size() + 1;
         std::memcpy(f.data() + 12, &n, 8);
       }},
      {"identity byte", [](std::string& f) { f[30] ^= 1; }},
      {"token byte", [&](std::string& f) { f[header - 200] ^= 0x40; }},
      {"checksum byte", [&](std::string& f) { f[header - 10] ^= 1; }},
      {"cell byte", [&](std::string& f) { f[header + 100] ^= 0x10; }},
      {"last cell byte", [](std::string& f) { f.back() ^= 1; }},
      {"other model", [](std::string& f) { rewrite_string_field(f, 0, std::string(64, 'a')); }},
      {"other kv type", [](std::string& f) { rewrite_string_field(f, 1, "q8_0"); }},
      {"other adapters", [](std::string& f) { rewrite_string_field(f, 2, "/x.gguf:1:1.0;"); }},
      {"other llama.cpp build",
       [](std::string& f) { rewrite_string_field(f, 3, "v0.0.1 (0000000)"); }},
      {"zeros", [](std::string& f) { std::fill(f.begin(), f.end(), '\0'); }},
  };
  // Bit flips across the file: 24 in the plain binary, 8 in the ASan twin (every named damage
  // above runs in both).
  const size_t flips = testutil::kSanitized ? 7 : 23;
  for (size_t k = 0; k < good.size(); k += good.size() / flips + 1) {
    corpus.push_back({"flip at " + std::to_string(k), [k](std::string& f) { f[k] ^= 0x5a; }});
  }
  // One model for the whole corpus (its vocabulary takes seconds to load under ASan); each
  // damage gets a new session, whose empty KV cache is what a restarted app has.
  Stack shared = Open(model_);
  ASSERT_TRUE(shared.session);
  for (const Damage& d : corpus) {
    std::string bytes = good;
    d.apply(bytes);
    testutil::write_file(good_path, bytes);
    Stack a;
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 1024;
    auto made = Session::Create(*shared.model, so);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    a.session = std::move(*made);
    auto c = Conversation::Create(*a.session, co);
    ASSERT_TRUE(c.ok());
    auto p = (*c)->Prepare();
    ASSERT_TRUE(p.ok()) << d.name << ": " << p.status().ToString();
    EXPECT_FALSE(p->restored) << d.name;
    EXPECT_FALSE(p->why_not_restored.empty()) << d.name;
    auto r = (*c)->Send("你好", Greedy(12));
    ASSERT_TRUE(r.ok()) << d.name << ": " << r.status().ToString();
    EXPECT_EQ(r->text, expected) << d.name;
    // The bad file was replaced by a good one, which the next start restores.
    EXPECT_EQ(testutil::read_file(good_path), good) << d.name;

    // The same damage on a saved conversation: refused (header) or history only (cells).
    // Beside the cache's directory, not in it (the cache's one file is read from there), and
    // in this process's own scratch directory: the plain binary and its ASan twin run at once.
    const std::string conv_file = conv_dir + "/conv-damaged.kv";
    ASSERT_TRUE((*c)->Save(conv_file).ok());
    std::string saved = testutil::read_file(conv_file);
    const size_t saved_header = [&] {
      uint64_t h = 0;
      std::memcpy(&h, saved.data() + 12, 8);
      return h;
    }();
    if (d.name == "cell byte" || d.name == "last cell byte") {
      saved[saved_header + (d.name == "cell byte" ? 100 : saved.size() - saved_header - 1)] ^= 1;
      testutil::write_file(conv_file, saved);
      RestoreInfo info;
      auto back = Conversation::Load(*a.session, conv_file, {}, &info);
      ASSERT_TRUE(back.ok()) << back.status().ToString();
      EXPECT_FALSE(info.kv_restored);
      EXPECT_NE(info.why_not.find("checksum"), std::string::npos) << info.why_not;
      EXPECT_EQ((*back)->history().size(), 2u);
    }
  }
  // A directory where a file should be.
  fs::remove(good_path);
  fs::create_directory(good_path);
  Stack a = Open(model_);
  auto c = Conversation::Create(*a.session, co);
  auto p = (*c)->Prepare();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->restored);
  EXPECT_EQ((*c)->Send("你好", Greedy(12))->text, expected);
  auto bad = Conversation::Load(*a.session, good_path);
  EXPECT_EQ(bad.status().code(), Code::kCorruptData) << bad.status().ToString();
}

}  // namespace
}  // namespace edgellm
