// Embedder against llama.cpp's own llama-embedding on the same files and texts: vectors
// (MiniLM- and bge-small-shape encoders and a Qwen3-Embedding-0.6B-shape decoder, English and
// Chinese, one text and many per decode), rerank scores (a bge-reranker-base-shape
// cross-encoder, also against llama-server's /v1/rerank), batch invariance, and bad input.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "edgellm/embed.h"
#include "gguf.h"
#include "testutil/fixtures.h"
#include "testutil/serve_process.h"

namespace edgellm {
namespace {

const std::vector<std::string> kTexts = {
    "The phone keeps the model on the device, so nothing leaves it.",
    "端侧大模型在手机本地运行，不联网也能用，数据不出设备。",
    "Battery, heat and memory decide how large a model a phone can run.",
    "Retrieval finds the notes that answer a question before the model writes.",
    "检索先找到能回答问题的笔记，再让模型作答。",
};

// Vectors printed by llama-embedding --embd-output-format raw, `width` numbers each. Its log
// thread can break a long line on stdout, so the numbers are read as one stream and cut into
// rows of `width`.
std::vector<std::vector<float>> reference_vectors(const std::string& model,
                                                  const std::vector<std::string>& texts,
                                                  const std::string& extra, size_t width = 384) {
  std::string joined;
  for (const std::string& t : texts) joined += (joined.empty() ? "" : "<#sep#>") + t;
  const std::string prompt_file = testutil::scratch_dir("embed-ref") + "/prompt.txt";
  testutil::write_file(prompt_file, joined);
  const std::string cmd = std::string(EDGELLM_LLAMA_EMBEDDING) + " -m " + model + " -f " +
                          prompt_file + " --embd-separator '<#sep#>' --embd-output-format raw " +
                          "-t 2 " + extra + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[65536];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  EXPECT_EQ(p ? pclose(p) : -1, 0) << cmd;
  std::istringstream vals(out);
  std::vector<float> all;
  float v;
  while (vals >> v) all.push_back(v);
  EXPECT_EQ(all.size(), texts.size() * width) << cmd << "\n" << out.substr(0, 400);
  std::vector<std::vector<float>> rows;
  for (size_t i = 0; i + width <= all.size(); i += width) {
    rows.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(i),
                      all.begin() + static_cast<std::ptrdiff_t>(i + width));
  }
  return rows;
}

struct Diff {
  float min_cosine = 1;
  float max_abs = 0;
};

Diff compare(const Embeddings& e, const std::vector<std::vector<float>>& ref) {
  Diff d;
  EXPECT_EQ(ref.size(), e.size());
  for (size_t i = 0; i < std::min(ref.size(), e.size()); ++i) {
    EXPECT_EQ(ref[i].size(), static_cast<size_t>(e.dims)) << "text " << i;
    if (ref[i].size() != static_cast<size_t>(e.dims)) continue;
    d.min_cosine = std::min(d.min_cosine, cosine_similarity(e.vector(i), ref[i]));
    for (int k = 0; k < e.dims; ++k) {
      d.max_abs = std::max(d.max_abs, std::fabs(e.vector(i)[k] - ref[i][k]));
    }
  }
  return d;
}

// Options set by `f` (designated initializers of structs holding a std::function trip GCC 12's
// -Wmaybe-uninitialized at -O3).
EmbedderOptions with(const std::function<void(EmbedderOptions&)>& f) {
  EmbedderOptions o;
  f(o);
  return o;
}

class EmbedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EmbedTest, VectorsEqualLlamaEmbeddingsOnesOneByOneAndBatched) {
  const std::string file = testutil::synth_model(GetParam(), "Q8_0");
  ASSERT_FALSE(file.empty());
  auto e = Embedder::Load(file);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const EmbedderInfo& info = (*e)->info();
  EXPECT_TRUE(info.can_embed);
  EXPECT_EQ(info.dims, 384);
  EXPECT_EQ(info.max_tokens, 512);
  EXPECT_EQ(info.pooling, GetParam() == "minilm-l6" ? Pooling::kMean : Pooling::kCls);
  EXPECT_EQ(info.identity.size(), 64u);

  auto batched = (*e)->Embed(kTexts);
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  EXPECT_EQ(batched->stats.n_decodes, 1);
  const auto ref = reference_vectors(file, kTexts, "");
  const Diff db = compare(*batched, ref);
  std::printf("%s batched: min cosine %.7f, max |diff| %.2e\n", GetParam().c_str(),
              db.min_cosine, db.max_abs);
  EXPECT_GE(db.min_cosine, 0.9999f);

  for (size_t i = 0; i < kTexts.size(); ++i) {
    auto one = (*e)->Embed({kTexts[i]});
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    const Diff d1 = compare(*one, {ref[i]});
    EXPECT_GE(d1.min_cosine, 0.9999f) << "text " << i;
    // Each vector has length 1 and its token count is the tokenizer's, [CLS] and [SEP] in.
    float norm = 0;
    for (float v : one->vector(0)) norm += v * v;
    EXPECT_NEAR(norm, 1.0f, 1e-4f);
    EXPECT_EQ(one->n_tokens[0], batched->n_tokens[i]);
  }
  LoadOptions vocab_only;
  vocab_only.vocab_only = true;
  auto m = Model::Load(file, vocab_only);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(static_cast<size_t>(batched->n_tokens[1]), (*m)->Tokenize(kTexts[1], true)->size());
}

INSTANTIATE_TEST_SUITE_P(Encoders, EmbedTest, ::testing::Values("minilm-l6", "bge-small-en-v1.5"));

// The Qwen3-Embedding-0.6B-shape decoder at its real size (28 layers, 596M parameters; Q8_0,
// 610 MiB, written once per build tree in about 20 s): LAST pooling over the <|endoftext|> its
// tokenizer appends (tokenizer.ggml.add_eos_token), English and Chinese, batched and alone, and
// a query with the model's instruction. The plain binary only: 28 layers of arithmetic show a
// sanitizer nothing the BERT cases above do not.
TEST(Embed, Qwen3EmbeddingShapeEqualsLlamaEmbedding) {
  if (testutil::kSanitized) GTEST_SKIP() << "a 0.6B decoder's numbers: the plain binary";
  const std::string file = testutil::synth_model("qwen3-embedding-0.6b", "Q8_0");
  ASSERT_FALSE(file.empty());
  // The defaults: 512 tokens per text and per decode (kDefaultMaxEmbedTokens: 8,192 of its
  // 32K tokens planned 11 GiB, mostly llama.cpp's compute buffer and an output row of 151,936
  // floats per token).
  auto e = Embedder::Load(file);
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  const EmbedderInfo& info = (*e)->info();
  EXPECT_EQ(info.max_tokens, kDefaultMaxEmbedTokens);
  EXPECT_EQ(info.batch_tokens, kDefaultMaxEmbedTokens);
  EXPECT_EQ(info.arch, "qwen3");
  EXPECT_EQ(info.pooling, Pooling::kLast);
  EXPECT_EQ(info.dims, 1024);
  EXPECT_EQ(info.query_prefix,
            "Instruct: Given a web search query, retrieve relevant passages that answer the "
            "query\nQuery:");
  EXPECT_EQ(info.document_prefix, "");

  // Every text ends with <|endoftext|> (151643), the token LAST pooling reads.
  for (const std::string& text : kTexts) {
    auto with_eos = (*e)->Tokenize(text, true);
    auto plain = (*e)->Tokenize(text, false);
    ASSERT_TRUE(with_eos.ok() && plain.ok());
    EXPECT_EQ(with_eos->size(), plain->size() + 1) << text;
    EXPECT_EQ(with_eos->back(), 151643) << text;
  }
  // English and Chinese in one decode; then alone a query (the instruction from the file;
  // llama-embedding gets the whole string) and an English text. One llama-embedding run
  // computes all three decodes: its batch (-b) holds the first two texts, and neither the query
  // nor the last text fits beside what precedes it. (-np 2: its default of 256 sequences needs
  // -b 256.) A 0.6B model's tokens are dear on two cores: a few short texts only.
  const std::vector<std::string> pair = {kTexts[0], kTexts[1]};
  auto batched = (*e)->Embed(pair);
  ASSERT_TRUE(batched.ok()) << batched.status().ToString();
  EXPECT_EQ(batched->stats.n_decodes, 1);
  const std::string question = "手机上的数据会上传到云端吗？";
  EmbedOptions as_query;
  as_query.kind = TextKind::kQuery;
  auto q = (*e)->Embed({question}, as_query);
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  EXPECT_EQ(static_cast<size_t>(q->n_tokens[0]),
            (*e)->Tokenize(info.query_prefix + question, true)->size());
  auto en = (*e)->Embed({kTexts[3]});
  ASSERT_TRUE(en.ok()) << en.status().ToString();
  const int32_t n_batch = batched->n_tokens[0] + batched->n_tokens[1];
  ASSERT_LE(q->n_tokens[0], n_batch);
  ASSERT_GT(q->n_tokens[0] + en->n_tokens[0], n_batch);
  const auto ref = reference_vectors(
      file, {kTexts[0], kTexts[1], info.query_prefix + question, kTexts[3]},
      "-c " + std::to_string(n_batch) + " -b " + std::to_string(n_batch) + " -np 2", 1024);
  ASSERT_EQ(ref.size(), 4u);
  const Diff db = compare(*batched, {ref[0], ref[1]});
  std::printf("qwen3-embedding-0.6b batched: min cosine %.7f, max |diff| %.2e\n", db.min_cosine,
              db.max_abs);
  EXPECT_GE(db.min_cosine, 0.9999f);
  Diff alone = compare(*q, {ref[2]});
  const Diff de = compare(*en, {ref[3]});
  alone.min_cosine = std::min(alone.min_cosine, de.min_cosine);
  alone.max_abs = std::max(alone.max_abs, de.max_abs);
  std::printf("qwen3-embedding-0.6b alone: min cosine %.7f, max |diff| %.2e\n", alone.min_cosine,
              alone.max_abs);
  EXPECT_GE(alone.min_cosine, 0.9999f);
}

TEST(Embed, AVectorDoesNotDependOnItsBatch) {
  auto e = Embedder::Load(testutil::synth_model("minilm-l6", "Q8_0"),
                          with([](auto& o) { o.batch_tokens = 512; o.batch_texts = 8; }));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  std::vector<std::string> many;
  for (int i = 0; i < 40; ++i) {
    std::string t = "note " + std::to_string(i) + ":";
    for (int w = 0; w < 3 + (i * 7) % 40; ++w) t += " word" + std::to_string((i * w) % 97);
    many.push_back(t);
  }
  many[17] = kTexts[1];
  int progress_calls = 0, last_done = 0;
  EmbedOptions o;
  o.on_progress = [&](int32_t done, int32_t total) {
    EXPECT_EQ(total, 40);
    EXPECT_GT(done, last_done);
    last_done = done;
    ++progress_calls;
    return true;
  };
  auto all = (*e)->Embed(many, o);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_GT(all->stats.n_decodes, 4);  // 8 texts per decode at most
  EXPECT_EQ(progress_calls, all->stats.n_decodes);
  EXPECT_EQ(last_done, 40);
  float min_cos = 1, max_abs = 0;
  for (int i : {0, 17, 23, 39}) {
    auto alone = (*e)->Embed({many[i]});
    ASSERT_TRUE(alone.ok());
    min_cos = std::min(min_cos, cosine_similarity(alone->vector(0), all->vector(i)));
    for (int k = 0; k < all->dims; ++k) {
      max_abs = std::max(max_abs, std::fabs(alone->vector(0)[k] - all->vector(i)[k]));
    }
  }
  std::printf("alone vs in a batch of 40: min cosine %.7f, max |diff| %.2e\n", min_cos, max_abs);
  EXPECT_GE(min_cos, 0.9999f);
  // Cancel after the first decode: nothing comes back.
  o.on_progress = [](int32_t, int32_t) { return false; };
  auto cancelled = (*e)->Embed(many, o);
  EXPECT_EQ(cancelled.status().code(), Code::kCancelled);
}

TEST(Embed, RerankScoresEqualLlamaEmbeddings) {
  const std::string file = testutil::synth_model("bge-reranker-base", "Q8_0");
  ASSERT_FALSE(file.empty());
  auto r = Embedder::Load(file);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)->info().can_rerank);
  EXPECT_FALSE((*r)->info().can_embed);
  const std::string query = "how does the phone keep my data private?";
  auto got = (*r)->Rerank(query, kTexts);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->scores.size(), kTexts.size());
  std::vector<std::string> pairs;
  for (const std::string& d : kTexts) pairs.push_back(query + "\t" + d);
  const auto ref = reference_vectors(file, pairs, "--pooling rank --embd-normalize -1", 1);
  ASSERT_EQ(ref.size(), kTexts.size());
  float max_abs = 0;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    ASSERT_EQ(ref[i].size(), 1u);
    max_abs = std::max(max_abs, std::fabs(got->scores[i] - ref[i][0]));
    EXPECT_NEAR(got->scores[i], ref[i][0], 1e-3f * std::max(1.0f, std::fabs(ref[i][0])))
        << "document " << i;
    EXPECT_NEAR(got->probabilities[i], 1 / (1 + std::exp(-got->scores[i])), 1e-6f);
  }
  std::printf("rerank vs llama-embedding: max |diff| %.2e\n", max_abs);
  for (size_t k = 1; k < got->order.size(); ++k) {
    EXPECT_GE(got->scores[got->order[k - 1]], got->scores[got->order[k]]);
  }
  // A pair alone scores as llama-embedding scores it alone; against the same pair in a batch
  // of five the score moves in the third decimal, in llama-embedding too: ggml's CPU kernels
  // sum a batch of rows in another order than one row, and this random 12-layer model carries
  // that rounding to its score (0.1630 alone, 0.1604 batched, measured).
  auto one = (*r)->Rerank(query, {kTexts[3]});
  ASSERT_TRUE(one.ok());
  const auto ref_one =
      reference_vectors(file, {pairs[3]}, "--pooling rank --embd-normalize -1", 1);
  ASSERT_EQ(ref_one.size(), 1u);
  EXPECT_NEAR(one->scores[0], ref_one[0][0], 1e-5f);
  std::printf("rerank alone vs in a batch of 5: %.2e\n", std::fabs(one->scores[0] - got->scores[3]));
  EXPECT_NEAR(one->scores[0], got->scores[3], 0.02f);
  // A reranker does not embed, an embedder does not rerank.
  EXPECT_NE((*r)->Embed({"x"}).status().message().find("is a reranker"), std::string::npos);
  auto e = Embedder::Load(testutil::synth_model("minilm-l6", "Q8_0"));
  ASSERT_TRUE(e.ok());
  EXPECT_NE((*e)->Rerank("q", {"d"}).status().message().find("not a reranker"),
            std::string::npos);
}

TEST(Embed, BadInputIsAClearErrorAndNothingElse) {
  auto e = Embedder::Load(testutil::synth_model("minilm-l6", "Q8_0"));
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  auto msg = [&](const std::vector<std::string>& t, EmbedOptions o = {}) {
    auto r = (*e)->Embed(t, o);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kInvalidArgument);
    return r.status().message();
  };
  EXPECT_NE(msg({}).find("no texts"), std::string::npos);
  EXPECT_NE(msg({"fine", ""}).find("text 1 is empty"), std::string::npos);
  EXPECT_NE(msg({std::string("a\0b", 3)}).find("NUL"), std::string::npos);
  EXPECT_NE(msg({"ok", "bad \xff\xfe utf-8"}).find("text 1 is not valid UTF-8"),
            std::string::npos);
  std::string huge;
  for (int i = 0; i < 100000; ++i) {
    huge += 'w';
    huge += std::to_string(i % 1000);
    huge += ' ';
  }
  const std::string m = msg({"short", huge});
  EXPECT_NE(m.find("text 1 has"), std::string::npos) << m;
  EXPECT_NE(m.find("more than the 512"), std::string::npos) << m;
  EmbedOptions cut;
  cut.truncate = true;
  auto t = (*e)->Embed({"short", huge}, cut);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->stats.n_truncated, 1);
  EXPECT_EQ(t->truncated[1], 1);
  EXPECT_EQ(t->n_tokens[1], 512);
  // The embedder still works after all of the above.
  EXPECT_TRUE((*e)->Embed({"still here"}).ok());

  // Options out of range, a chat model, a missing file.
  const std::string minilm = testutil::synth_model("minilm-l6", "Q8_0");
  EXPECT_NE(Embedder::Load(minilm, with([](auto& o) { o.max_tokens = 100000; })).status().message().find("max_tokens"),
            std::string::npos);
  EXPECT_NE(Embedder::Load(minilm, with([](auto& o) { o.batch_texts = 0; })).status().message().find("batch_texts"),
            std::string::npos);
  EXPECT_NE(Embedder::Load(minilm, with([](auto& o) { o.pooling = Pooling::kRank; })).status().message().find(
                "not a reranker"),
            std::string::npos);
  auto chat = Embedder::Load(testutil::synth_model("tiny", "Q8_0"));
  ASSERT_FALSE(chat.ok());
  EXPECT_NE(chat.status().message().find("not an embedding model"), std::string::npos)
      << chat.status().message();
  // The same chat model embeds when told how to pool (decoder hidden states, last token).
  // (llama.cpp reserves an output row of n_vocab floats per token of a decode: 256 tokens of
  // Qwen2's 151,936-token vocabulary are 148 MiB of address space.)
  auto forced = Embedder::Load(testutil::synth_model("tiny", "Q8_0"),
                               with([](auto& o) {
                                 o.pooling = Pooling::kLast;
                                 o.max_tokens = 256;
                                 o.batch_tokens = 256;
                               }));
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  auto fv = (*forced)->Embed({"hello", "你好"});
  ASSERT_TRUE(fv.ok()) << fv.status().ToString();
  EXPECT_EQ(fv->dims, 256);
  EXPECT_EQ(Embedder::Load("/nonexistent/model.gguf").status().code(), Code::kNotFound);
}

TEST(Embed, QueryPrefixFromTheFileOrTheCaller) {
  const std::string bge = testutil::synth_model("bge-small-en-v1.5", "Q8_0");
  auto e = Embedder::Load(bge);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)->info().query_prefix,
            "Represent this sentence for searching relevant passages: ");
  EmbedOptions q;
  q.kind = TextKind::kQuery;
  auto as_query = (*e)->Embed({"battery life"}, q);
  auto plain = (*e)->Embed({"Represent this sentence for searching relevant passages: battery life"});
  ASSERT_TRUE(as_query.ok() && plain.ok());
  EXPECT_GE(cosine_similarity(as_query->vector(0), plain->vector(0)), 0.99999f);
  auto own = Embedder::Load(bge, with([](auto& o) { o.query_prefix = "query: "; }));
  ASSERT_TRUE(own.ok());
  EXPECT_EQ((*own)->info().query_prefix, "query: ");
  EXPECT_EQ(pooling_from_name("cls").value(), Pooling::kCls);
  EXPECT_FALSE(pooling_from_name("max").ok());
}

using json = nlohmann::json;

std::pair<int, json> post(int port, const char* path, const json& body) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  auto r = c.Post(path, body.dump(), "application/json");
  if (!r) return {0, json()};
  return {r->status, json::parse(r->body, nullptr, false)};
}

std::pair<int, json> post(const testutil::ServeProcess& s, const char* path, const json& body) {
  return post(s.port(), path, body);
}

std::string error_of(const json& body) {
  return body.is_object() && body.contains("error") ? body["error"]["message"].get<std::string>()
                                                    : body.dump();
}

std::vector<float> from_base64(const std::string& b64) {
  std::string bytes;
  uint32_t acc = 0;
  int bits = 0;
  for (char ch : b64) {
    const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* at = std::strchr(alphabet, ch);
    if (ch == '=' || !at) break;
    acc = (acc << 6) | static_cast<uint32_t>(at - alphabet);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

// `edgellm serve --embedding-model`: /v1/embeddings in OpenAI's shape, equal to the library,
// every bound a 400 before any work; /v1/rerank in llama-server's shape.
TEST(EmbedServe, EmbeddingsAndRerankOverHttp) {
  const std::string minilm = testutil::synth_model("minilm-l6", "Q8_0");
  testutil::ServeProcess s("", {"--embedding-model", minilm, "--max-inputs", "100"});
  ASSERT_GT(s.port(), 0) << s.log();
  auto lib = Embedder::Load(minilm);
  ASSERT_TRUE(lib.ok());
  auto want = (*lib)->Embed(kTexts);
  ASSERT_TRUE(want.ok());

  auto [st, body] = post(s, "/v1/embeddings", {{"model", "x"}, {"input", kTexts}});
  ASSERT_EQ(st, 200) << body.dump();
  ASSERT_EQ(body["data"].size(), kTexts.size());
  for (size_t i = 0; i < kTexts.size(); ++i) {
    EXPECT_EQ(body["data"][i]["index"], i);
    const auto v = body["data"][i]["embedding"].get<std::vector<float>>();
    EXPECT_GE(cosine_similarity(v, want->vector(i)), 0.9999f) << i;
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"].get<int64_t>(), want->stats.n_tokens);
  // One string; base64 (the official openai client's default); token ids.
  auto [st1, one] = post(s, "/v1/embeddings", {{"input", kTexts[1]}, {"encoding_format", "base64"}});
  ASSERT_EQ(st1, 200) << one.dump();
  const auto decoded = from_base64(one["data"][0]["embedding"].get<std::string>());
  ASSERT_EQ(decoded.size(), 384u);
  EXPECT_GE(cosine_similarity(decoded, want->vector(1)), 0.9999f);
  auto ids = (*lib)->Tokenize(kTexts[0], true);
  auto [st2, tok] = post(s, "/v1/embeddings", {{"input", json::array({*ids})}});
  ASSERT_EQ(st2, 200) << tok.dump();
  EXPECT_GE(cosine_similarity(tok["data"][0]["embedding"].get<std::vector<float>>(),
                              want->vector(0)),
            0.9999f);
  // Bounds and bad requests: a 400 naming the problem.
  std::string huge;
  for (int i = 0; i < 3000; ++i) huge += "word ";
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"input", std::vector<std::string>(101, "x")}}, "--max-inputs"},
      {{{"input", huge}}, "more than the 512"},
      {{{"input", ""}}, "empty"},
      {{{"input", json::array({json::array({999999})})}}, "outside this model's vocabulary"},
      {{{"input", kTexts[0]}, {"dimensions", 128}}, "does not support shortening"},
      {{{"input", kTexts[0]}, {"encoding_format", "int8"}}, "encoding_format"},
      {{{"input", 42}}, "input must be"},
      {{{"prompt", "x"}}, "input is missing"}};
  for (const auto& [req, want_msg] : bad) {
    auto [code, b] = post(s, "/v1/embeddings", req);
    EXPECT_EQ(code, 400) << req.dump().substr(0, 80);
    EXPECT_NE(error_of(b).find(want_msg), std::string::npos) << error_of(b);
  }
  auto [chat_code, chat] = post(s, "/v1/chat/completions", {{"messages", json::array()}});
  EXPECT_EQ(chat_code, 404);
  EXPECT_NE(error_of(chat).find("no chat model"), std::string::npos);

  const std::string reranker = testutil::synth_model("bge-reranker-base", "Q8_0");
  testutil::ServeProcess r("", {"--embedding-model", reranker});
  ASSERT_GT(r.port(), 0) << r.log();
  auto rr = Embedder::Load(reranker);
  ASSERT_TRUE(rr.ok());
  const std::string query = "how does the phone keep my data private?";
  auto scores = (*rr)->Rerank(query, kTexts);
  ASSERT_TRUE(scores.ok());
  auto [rs, rb] = post(r, "/v1/rerank", {{"query", query}, {"documents", kTexts}, {"top_n", 2},
                                         {"return_documents", true}});
  ASSERT_EQ(rs, 200) << rb.dump();
  ASSERT_EQ(rb["results"].size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const auto i = static_cast<size_t>(scores->order[k]);
    EXPECT_EQ(rb["results"][k]["index"], i);
    EXPECT_NEAR(rb["results"][k]["relevance_score"].get<float>(), scores->scores[i], 1e-5f);
    EXPECT_EQ(rb["results"][k]["document"]["text"], kTexts[i]);
  }
  auto [noq, nb] = post(r, "/rerank", {{"documents", kTexts}});
  EXPECT_EQ(noq, 400);
  EXPECT_NE(error_of(nb).find("query"), std::string::npos);
  auto [wrong, wb] = post(r, "/v1/embeddings", {{"input", "x"}});
  EXPECT_EQ(wrong, 400);
  EXPECT_NE(error_of(wb).find("rerank model"), std::string::npos);
}

// llama.cpp's llama-server as a child process on a free loopback port (--port 0: the address it
// logs once the model is loaded), stopped with SIGTERM, then SIGKILL.
class LlamaServer {
 public:
  explicit LlamaServer(const std::vector<std::string>& args)
      : log_(testutil::scratch_dir("llama-server") + "/log") {
    std::vector<std::string> argv_s = {EDGELLM_LLAMA_SERVER, "--host", "127.0.0.1", "--port", "0"};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      (void)!std::freopen(log_.c_str(), "a", stdout);  // both appending: no overwrites
      (void)!std::freopen(log_.c_str(), "a", stderr);
      std::vector<char*> argv;
      for (std::string& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(EDGELLM_LLAMA_SERVER, argv.data());
      ::_exit(127);
    }
    const std::string mark = "listening on http://127.0.0.1:";
    for (int i = 0; i < 1200 && pid_ > 0 && port_ == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const std::string text = log();
      const size_t at = text.find(mark);
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port_ = std::atoi(text.c_str() + at + mark.size());
      }
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) pid_ = -1;
    }
  }
  ~LlamaServer() {
    Stop();
    std::filesystem::remove_all(std::filesystem::path(log_).parent_path());
  }
  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 100; ++i) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  LlamaServer(const LlamaServer&) = delete;
  LlamaServer& operator=(const LlamaServer&) = delete;
  int port() const { return port_; }
  std::string log() const { return testutil::read_file(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// A copy of the GGUF `from` with `tmpl` as its rerank template (tokenizer.chat_template.rerank):
// the new header, then the original data section (the tensor table's offsets are relative to it).
bool copy_with_rerank_template(const std::string& from, const std::string& tmpl,
                               const std::string& to) {
  gguf_init_params p{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* g = gguf_init_from_file(from.c_str(), p);
  if (!g) return false;
  const size_t data_offset = gguf_get_data_offset(g);
  gguf_set_val_str(g, "tokenizer.chat_template.rerank", tmpl.c_str());
  const bool meta_ok = gguf_write_to_file(g, to.c_str(), /*only_meta=*/true);
  gguf_free(g);
  const std::string bytes = testutil::read_file(from);
  std::FILE* f = std::fopen(to.c_str(), "ab");
  if (!meta_ok || !f || bytes.size() < data_offset) {
    if (f) std::fclose(f);
    return false;
  }
  const size_t n = bytes.size() - data_offset;
  const bool ok = std::fwrite(bytes.data() + data_offset, 1, n, f) == n;
  return std::fclose(f) == 0 && ok;
}

// Rerank scores against llama-server's /v1/rerank on the same reranker file. Without a rerank
// template llama-server joins a pair as [CLS] query [SEP] document, with no closing [SEP] for a
// WordPiece vocabulary (it closes a pair only where the vocabulary adds EOS, and WordPiece's
// does not), where edgellm, like llama-embedding and Hugging Face's BERT tokenizer, closes it.
// So the server counts one token less per document than edgellm, and edgellm on a copy whose
// rerank template spells the server's pair gives the server's scores. One slot
// (-np 1): the server decodes each document alone, and so does edgellm here (batching moves a
// score in the third decimal, in both: RerankScoresEqualLlamaEmbeddings).
TEST(Embed, RerankScoresEqualLlamaServers) {
  if (testutil::kSanitized) GTEST_SKIP() << "a reference process's numbers: the plain binary";
  const std::string file = testutil::synth_model("bge-reranker-base", "Q8_0");
  ASSERT_FALSE(file.empty());
  const std::string query = "how does the phone keep my data private?";
  json body;
  {
    LlamaServer server({"-m", file, "--reranking", "-t", "2", "-np", "1", "-c", "512"});
    ASSERT_GT(server.port(), 0) << server.log();
    int st = 0;
    std::tie(st, body) =
        post(server.port(), "/v1/rerank", {{"query", query}, {"documents", kTexts}});
    ASSERT_EQ(st, 200) << body.dump() << server.log();
  }
  ASSERT_EQ(body["results"].size(), kTexts.size()) << body.dump();
  std::vector<float> want(kTexts.size(), NAN);
  for (const json& r : body["results"]) {
    want.at(r["index"].get<size_t>()) = r["relevance_score"].get<float>();
  }

  auto r = Embedder::Load(file);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto ours = (*r)->Rerank(query, kTexts);
  ASSERT_TRUE(ours.ok()) << ours.status().ToString();
  EXPECT_EQ(body["usage"]["prompt_tokens"].get<int64_t>(),
            ours->stats.n_tokens - static_cast<int64_t>(kTexts.size()));
  float closed = 0;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    closed = std::max(closed, std::fabs(ours->scores[i] - want[i]));
  }

  const std::string dir = testutil::scratch_dir("rerank-server");
  struct Cleanup {
    std::string dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};  // the copy is 112 MiB
  const std::string copy = dir + "/server-pair.gguf";
  ASSERT_TRUE(copy_with_rerank_template(file, "[CLS]{query}[SEP]{document}", copy));
  auto t = Embedder::Load(copy);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE((*t)->info().has_rerank_template);
  float max_abs = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < kTexts.size(); ++i) {
    auto one = (*t)->Rerank(query, {kTexts[i]});
    ASSERT_TRUE(one.ok()) << one.status().ToString();
    tokens += one->stats.n_tokens;
    max_abs = std::max(max_abs, std::fabs(one->scores[0] - want[i]));
    EXPECT_NEAR(one->scores[0], want[i], 1e-4f) << "document " << i;
  }
  EXPECT_EQ(tokens, body["usage"]["prompt_tokens"].get<int64_t>());
  std::printf("rerank vs llama-server on the same pairs: max |diff| %.2e\n", max_abs);
  std::printf("rerank vs llama-server, edgellm's closed pairs: max |diff| %.2e\n", closed);
}

}  // namespace
}  // namespace edgellm
