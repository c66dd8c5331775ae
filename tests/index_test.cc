// DocumentIndex on real SQLite files with a MiniLM-shape encoder: chunking (CJK and English,
// offsets), add/search/remove in every mode, the model check, damaged files, a writer killed
// with SIGKILL in the middle of adds, a reader during a writer, int8 against f32.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/utf8.h"
#include "edgellm/index.h"
#include "retrieval/sqlite_db.h"
#include "testutil/fixtures.h"

extern char** environ;

namespace edgellm {
namespace {
namespace fs = std::filesystem;

const char* kNotes =
    "The battery lasts two days when the model runs on the phone. Heat builds up during long "
    "answers, so the governor lowers the thread count.\n\n"
    "端侧大模型在手机本地运行，不联网也能用，数据不出设备。内存不足时，系统会先释放缓存。"
    "温度过高时，调度器会减少线程数量，回答变慢但手机不会过热。\n\n"
    "Recipes: bake the bread at 220 degrees for thirty minutes, then let it cool on a rack.";

// A long document: sentences in both languages, no spaces in the Chinese ones.
std::string long_text(int sentences) {
  std::string t;
  for (int i = 0; i < sentences; ++i) {
    t += i % 3 == 0 ? "第" + std::to_string(i) + "段：手机上的模型需要在内存和速度之间取得平衡。"
                    : "Sentence " + std::to_string(i) + " talks about memory, speed and heat. ";
  }
  return t;
}

class IndexTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto e = Embedder::Load(testutil::synth_model("minilm-l6", "Q8_0"));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    embedder_ = e->release();
  }
  static void TearDownTestSuite() { delete embedder_; }
  static Embedder* embedder_;
};
Embedder* IndexTest::embedder_ = nullptr;

TEST_F(IndexTest, ChunksStayUnderTheLimitOverlapAndKeepOffsets) {
  const std::string dir = testutil::scratch_dir("index-chunks");
  auto idx = DocumentIndex::Open(dir, embedder_, {.chunk_tokens = 64, .chunk_overlap = 16});
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  const std::string text = long_text(60);
  auto add = (*idx)->AddText("long.txt", text);
  ASSERT_TRUE(add.ok()) << add.status().ToString();
  EXPECT_GT(add->chunks, 5);
  EXPECT_EQ(add->truncated, 0);
  auto db = retrieval::Db::Open(dir + "/index.sqlite", false, true);
  ASSERT_TRUE(db.ok());
  auto s = (*db)->Prepare("SELECT start, end, text, tokens FROM chunks ORDER BY ord");
  ASSERT_TRUE(s.ok());
  size_t prev_start = 0, prev_end = 0, covered = 0;
  int n = 0;
  while (s->Step().value()) {
    const size_t start = static_cast<size_t>(s->Int(0)), end = static_cast<size_t>(s->Int(1));
    const std::string chunk = s->Text(2);
    EXPECT_EQ(chunk, text.substr(start, end - start));
    EXPECT_TRUE(is_valid_utf8(chunk));
    EXPECT_LE(s->Int(3), 64 + 2) << chunk;  // the chunk's tokens, [CLS] and [SEP] added
    if (n > 0) {
      EXPECT_GT(start, prev_start);
      EXPECT_LT(start, prev_end) << "chunk " << n << " does not overlap the one before";
    }
    covered = std::max(covered, end);
    prev_start = start;
    prev_end = end;
    ++n;
  }
  EXPECT_EQ(n, add->chunks);
  EXPECT_EQ(covered, text.size());
}

TEST_F(IndexTest, AddSearchRemoveInEveryMode) {
  const std::string dir = testutil::scratch_dir("index-basic");
  auto idx = DocumentIndex::Open(dir, embedder_, {.chunk_tokens = 48, .chunk_overlap = 0});
  ASSERT_TRUE(idx.ok()) << idx.status().ToString();
  ASSERT_TRUE((*idx)->AddText("notes.txt", kNotes).ok());
  ASSERT_TRUE((*idx)->AddText("other.txt", long_text(12)).ok());
  // Lexical: a two-character Chinese word and an English one find their chunks.
  for (const char* q : {"温度", "bread"}) {
    auto r = (*idx)->Search(q, {.top_k = 3, .mode = SearchMode::kLexical});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_FALSE(r->hits.empty()) << q;
    EXPECT_EQ(r->hits[0].source, "notes.txt");
    EXPECT_NE(r->hits[0].text.find(q), std::string::npos) << r->hits[0].text;
    EXPECT_EQ(r->hits[0].found_by, "lexical");
    EXPECT_GT(r->hits[0].lexical_score, 0);
  }
  // Vector: a chunk's own text is its nearest neighbour (cosine ~1, even with random weights).
  auto all = (*idx)->Search("bread", {.top_k = 1, .mode = SearchMode::kLexical});
  ASSERT_TRUE(all.ok() && !all->hits.empty());
  const SearchHit target = all->hits[0];
  auto v = (*idx)->Search(target.text, {.top_k = 3, .mode = SearchMode::kVector});
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  ASSERT_FALSE(v->hits.empty());
  EXPECT_EQ(v->hits[0].chunk_id, target.chunk_id);
  EXPECT_GT(v->hits[0].vector_score, 0.999f);
  EXPECT_EQ(v->hits[0].found_by, "vector");
  EXPECT_EQ(v->chunks_searched, (*idx)->Stats()->chunks);
  // Hybrid: found by both rankings, fused first.
  auto h = (*idx)->Search(target.text, {.top_k = 3});
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->hits[0].chunk_id, target.chunk_id);
  EXPECT_EQ(h->hits[0].found_by, "both");
  EXPECT_NEAR(h->hits[0].score, 2.0f / 61, 1e-6f);
  // Grounding a question: the chunks numbered with their sources, then the question; a token
  // budget too small for any chunk leaves the question alone.
  GroundOptions go;
  go.search.mode = SearchMode::kLexical;
  auto g = ground_question(**idx, "温度", go);
  ASSERT_TRUE(g.ok()) << g.status().ToString();
  ASSERT_FALSE(g->cited.empty());
  EXPECT_NE(g->prompt.find("[1] (notes.txt) "), std::string::npos) << g->prompt;
  EXPECT_NE(g->prompt.find(g->cited[0].text), std::string::npos);
  EXPECT_TRUE(g->prompt.ends_with("\nQuestion: 温度")) << g->prompt;
  go.max_context_tokens = 2;
  auto bare = ground_question(**idx, "温度", go);
  ASSERT_TRUE(bare.ok());
  EXPECT_TRUE(bare->cited.empty());
  EXPECT_EQ(bare->prompt, "温度");
  // Replace and remove by source.
  auto again = (*idx)->AddText("notes.txt", "Only one sentence about bread now.");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replaced);
  auto gone = (*idx)->Search("温度", {.mode = SearchMode::kLexical});
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->hits.empty());
  auto st = (*idx)->Stats();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->sources, 2);
  EXPECT_EQ(st->dims, 384);
  EXPECT_EQ(st->model_identity, embedder_->info().identity);
  EXPECT_EQ((*idx)->Remove("notes.txt").value(), 1);
  EXPECT_EQ((*idx)->Remove("notes.txt").value(), 0);
  auto none = (*idx)->Search("bread", {.mode = SearchMode::kLexical});
  EXPECT_TRUE(none->hits.empty());
  EXPECT_EQ((*idx)->Stats()->source_names, std::vector<std::string>{"other.txt"});
}

TEST_F(IndexTest, AnotherModelDamagedFilesAndBadInputAreClearErrors) {
  const std::string dir = testutil::scratch_dir("index-errors");
  {
    auto idx = DocumentIndex::Open(dir, embedder_);
    ASSERT_TRUE(idx.ok());
    ASSERT_TRUE((*idx)->AddText("a", kNotes).ok());
    EXPECT_NE((*idx)->AddText("", "x").status().message().find("source name is empty"),
              std::string::npos);
    EXPECT_NE((*idx)->AddText("b", " \n\t ").status().message().find("blank"), std::string::npos);
    EXPECT_NE((*idx)->AddText("b", "bad \xff").status().message().find("UTF-8"),
              std::string::npos);
    EXPECT_EQ((*idx)->AddFile(dir + "/missing.txt").status().code(), Code::kNotFound);
    EXPECT_FALSE((*idx)->Search("", {}).ok());
    EXPECT_FALSE((*idx)->Search("q", {.top_k = 0}).ok());
  }
  auto other = Embedder::Load(testutil::synth_model("bge-small-en-v1.5", "Q8_0"));
  ASSERT_TRUE(other.ok());
  auto refused = DocumentIndex::Open(dir, other->get());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("edgellm-synth-minilm-l6"), std::string::npos)
      << refused.status().message();
  // Without an embedder: lexical search and stats work, vectors are refused.
  auto lexical = DocumentIndex::Open(dir, nullptr, {.read_only = true});
  ASSERT_TRUE(lexical.ok()) << lexical.status().ToString();
  EXPECT_TRUE((*lexical)->Search("battery", {.mode = SearchMode::kLexical}).ok());
  EXPECT_NE((*lexical)->Search("battery").status().message().find("embedding model"),
            std::string::npos);
  EXPECT_FALSE((*lexical)->AddText("c", "text").ok());
  EXPECT_FALSE(DocumentIndex::Open(dir, embedder_, {.chunk_tokens = 4}).ok());
  EXPECT_FALSE(DocumentIndex::Open(dir, embedder_, {.chunk_tokens = 100, .chunk_overlap = 90}).ok());
  // Damaged database files: garbage, truncated halfway, zero bytes.
  const std::string good = testutil::read_file(dir + "/index.sqlite");
  for (const std::string& bad : {std::string(4096, 'x'), good.substr(0, good.size() / 2),
                                 std::string()}) {
    const std::string d = testutil::scratch_dir("index-damaged");
    testutil::write_file(d + "/index.sqlite", bad);
    auto idx = DocumentIndex::Open(d, embedder_, {.read_only = !bad.empty()});
    if (idx.ok()) {  // a damaged file may open; then every use is an error, never a crash
      auto r = (*idx)->Search("battery");
      EXPECT_TRUE(!r.ok() || r->hits.empty() || bad.empty());
    } else {
      EXPECT_NE(idx.status().message().find("index"), std::string::npos);
    }
  }
}

// The writer for the kill test, run as a child process (DISABLED_: only when asked for).
TEST_F(IndexTest, DISABLED_WriterForTheKillTest) {
  const char* dir = std::getenv("EDGELLM_INDEX_KILL_DIR");
  ASSERT_NE(dir, nullptr);
  auto idx = DocumentIndex::Open(dir, embedder_, {.chunk_tokens = 64, .chunk_overlap = 0});
  ASSERT_TRUE(idx.ok());
  const std::string text = long_text(120);
  for (int i = 0;; ++i) ASSERT_TRUE((*idx)->AddText("doc" + std::to_string(i % 3), text).ok());
}

TEST_F(IndexTest, AWriterKilledMidAddLeavesWholeAddsOnly) {
  const std::string dir = testutil::scratch_dir("index-kill");
  auto ref = DocumentIndex::Open(testutil::scratch_dir("index-kill-ref"), embedder_,
                                 {.chunk_tokens = 64, .chunk_overlap = 0});
  const int32_t whole = (*ref)->AddText("x", long_text(120))->chunks;
  setenv("EDGELLM_INDEX_KILL_DIR", dir.c_str(), 1);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  for (int delay_ms : {700, 2300, 4100}) {
    std::vector<std::string> args = {self, "--gtest_also_run_disabled_tests",
                                     "--gtest_filter=IndexTest.DISABLED_WriterForTheKillTest"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv.data(), environ), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    auto idx = DocumentIndex::Open(dir, embedder_, {.chunk_tokens = 64, .chunk_overlap = 0});
    ASSERT_TRUE(idx.ok()) << idx.status().ToString();
    auto st = (*idx)->Stats();
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->chunks, st->sources * whole) << "after a kill at " << delay_ms << " ms";
    auto db = retrieval::Db::Open(dir + "/index.sqlite", false, false);
    auto check = (*db)->Prepare("PRAGMA integrity_check");
    ASSERT_TRUE(check.ok() && check->Step().value());
    EXPECT_EQ(check->Text(0), "ok");
    auto r = (*idx)->Search("memory", {.top_k = 3});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::printf("killed after %d ms: %lld sources, %lld chunks, search %s\n", delay_ms,
                static_cast<long long>(st->sources), static_cast<long long>(st->chunks),
                r->hits.empty() ? "empty" : "found");
  }
}

TEST_F(IndexTest, ReadersKeepSearchingWhileAWriterAdds) {
  const std::string dir = testutil::scratch_dir("index-concurrent");
  auto writer = DocumentIndex::Open(dir, embedder_);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->AddText("seed", kNotes).ok());
  std::atomic<bool> done{false};
  std::atomic<int> searches{0}, failures{0};
  std::thread reader([&] {
    auto r = DocumentIndex::Open(dir, nullptr, {.read_only = true});
    if (!r.ok()) {
      ++failures;
      return;
    }
    while (!done) {
      auto s = (*r)->Search("memory", {.mode = SearchMode::kLexical});
      if (!s.ok() || !(*r)->Stats().ok()) ++failures;
      ++searches;
    }
  });
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE((*writer)->AddText("doc" + std::to_string(i), long_text(30)).ok());
  }
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(searches.load(), 6);
}

TEST_F(IndexTest, Int8FindsWhatF32Finds) {
  auto f32 = DocumentIndex::Open(testutil::scratch_dir("index-f32"), embedder_);
  auto i8 = DocumentIndex::Open(testutil::scratch_dir("index-i8"), embedder_,
                                {.vector_type = VectorType::kInt8});
  ASSERT_TRUE(f32.ok() && i8.ok());
  const std::string text = long_text(90);
  ASSERT_TRUE((*f32)->AddText("t", text).ok());
  ASSERT_TRUE((*i8)->AddText("t", text).ok());
  EXPECT_EQ((*i8)->Stats()->vector_type, VectorType::kInt8);
  EXPECT_LT((*i8)->Stats()->bytes_on_disk, (*f32)->Stats()->bytes_on_disk);
  int found = 0, total = 0;
  for (const char* q : {"memory and speed", "手机上的模型", "heat", "Sentence 40", "平衡"}) {
    auto a = (*f32)->Search(q, {.top_k = 10, .mode = SearchMode::kVector});
    auto b = (*i8)->Search(q, {.top_k = 10, .mode = SearchMode::kVector});
    ASSERT_TRUE(a.ok() && b.ok());
    std::set<size_t> want;
    for (const SearchHit& h : a->hits) want.insert(h.start);
    for (const SearchHit& h : b->hits) found += want.count(h.start);
    total += static_cast<int>(a->hits.size());
  }
  const double recall = static_cast<double>(found) / total;
  std::printf("int8 recall@10 against f32: %.3f\n", recall);
  EXPECT_GE(recall, 0.8);
}

// The CLI over the same library: index add/search/stats/remove, embed, rerank, and the errors
// a user meets first.
TEST(IndexCli, AddSearchStatsRemoveEmbedRerank) {
  const std::string minilm = testutil::synth_model("minilm-l6", "Q8_0");
  const std::string dir = testutil::scratch_dir("index-cli");
  const std::string doc = dir + "/notes.txt";
  testutil::write_file(doc, kNotes);
  auto added = testutil::run_cli("index add " + dir + "/idx " + doc + " -m " + minilm + " --json");
  ASSERT_EQ(added.rc, 0) << added.err;
  EXPECT_GT(nlohmann::json::parse(added.out)["added"][0]["chunks"].get<int>(), 0);
  auto found = testutil::run_cli("index search " + dir + "/idx 温度 --mode lexical --json");
  ASSERT_EQ(found.rc, 0) << found.err;
  const auto hits = nlohmann::json::parse(found.out)["hits"];
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(hits[0]["source"], doc);
  EXPECT_EQ(hits[0]["found_by"], "lexical");
  auto hybrid = testutil::run_cli("index search " + dir + "/idx battery -m " + minilm);
  EXPECT_EQ(hybrid.rc, 0) << hybrid.err;
  EXPECT_NE(hybrid.out.find("notes.txt"), std::string::npos) << hybrid.out;
  auto no_model = testutil::run_cli("index search " + dir + "/idx battery");
  EXPECT_EQ(no_model.rc, 1);
  EXPECT_NE(no_model.err.find("-m MODEL"), std::string::npos) << no_model.err;
  // A grounded chat turn: the question asked with the index's chunks, the reply's sources.
  testutil::write_file(dir + "/q.txt", "温度过高时会怎样？\n");
  auto chat_turn = testutil::run_cli("chat -m " + testutil::synth_model("tiny", "Q8_0") +
                                     " --ctx 1024 --temp 0 -n 8 --json --index " + dir +
                                     "/idx --index-mode lexical < " + dir + "/q.txt");
  ASSERT_EQ(chat_turn.rc, 0) << chat_turn.err;
  const auto turn = nlohmann::json::parse(chat_turn.out.substr(0, chat_turn.out.find('\n')));
  ASSERT_FALSE(turn["sources"].empty()) << turn.dump();
  EXPECT_EQ(turn["sources"][0]["source"], doc);
  EXPECT_EQ(turn["sources"][0]["n"], 1);
  EXPECT_NE(turn["sources"][0]["text"].get<std::string>().find("温度"), std::string::npos);
  EXPECT_GT(turn["n_prompt"].get<int>(), 40);  // the notes are in the prompt
  auto stats = testutil::run_cli("index stats " + dir + "/idx --json");
  ASSERT_EQ(stats.rc, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["sources"], 1);
  EXPECT_EQ(testutil::run_cli("index remove " + dir + "/idx " + doc).rc, 0);
  EXPECT_EQ(nlohmann::json::parse(testutil::run_cli("index stats " + dir + "/idx --json").out)
                ["sources"],
            0);
  EXPECT_EQ(testutil::run_cli("index stats " + dir + "/none").rc, 1);

  auto emb = testutil::run_cli("embed -m " + minilm + " -p 'first text' -p '第二段' --json");
  ASSERT_EQ(emb.rc, 0) << emb.err;
  const auto ej = nlohmann::json::parse(emb.out);
  EXPECT_EQ(ej["embeddings"].size(), 2u);
  EXPECT_EQ(ej["embeddings"][1].size(), 384u);
  auto rr = testutil::run_cli("rerank -m " + testutil::synth_model("bge-reranker-base", "Q8_0") +
                              " -q 'battery life' 'the battery lasts two days' 'bake the bread' --json");
  ASSERT_EQ(rr.rc, 0) << rr.err;
  EXPECT_EQ(nlohmann::json::parse(rr.out)["results"].size(), 2u);
  auto chat = testutil::run_cli("embed -m " + testutil::synth_model("tiny", "Q8_0") + " -p x");
  EXPECT_EQ(chat.rc, 1);
  EXPECT_NE(chat.err.find("not an embedding model"), std::string::npos) << chat.err;
}

}  // namespace
}  // namespace edgellm
