// edgellm's own model pipeline: the corpus (deterministic, held-out items never in training),
// the learned vocabulary (through llama.cpp's tokenizer), a short real training run through
// libllama's optimizer whose loss falls, and eval on the result.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "edgellm/edgellm.h"
#include "edgellm/eval.h"
#include "edgellm/train.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

TEST(Corpus, DeterministicAndHeldOutNeverInTraining) {
  for (const std::string task : {"intent", "extract", "math", "code", "rewrite", "record"}) {
    auto a = make_task_items(task, Split::kTrain, 3000, 1);
    auto b = make_task_items(task, Split::kTrain, 3000, 1);
    auto test = make_task_items(task, Split::kTest, 300, 7);
    ASSERT_TRUE(a.ok() && b.ok() && test.ok());
    ASSERT_EQ(a->size(), 3000u);
    ASSERT_EQ(test->size(), 300u);
    std::set<std::string> train_prompts;
    for (size_t i = 0; i < a->size(); ++i) {
      EXPECT_EQ((*a)[i].prompt, (*b)[i].prompt);
      EXPECT_FALSE((*a)[i].answer.empty());
      train_prompts.insert((*a)[i].prompt);
    }
    // Other seeds draw other train items, still never a test one.
    auto c = make_task_items(task, Split::kTrain, 3000, 99);
    for (const TaskItem& it : *c) train_prompts.insert(it.prompt);
    for (const TaskItem& it : *test) EXPECT_EQ(train_prompts.count(it.prompt), 0u) << it.prompt;
  }
  // Answers are right: column steps, each a true fact about the right digits, then the result.
  auto math = make_task_items("math", Split::kTest, 200, 7);
  int checked = 0;
  for (const TaskItem& it : *math) {
    int a = 0, b = 0;
    char op = 0;
    if (std::sscanf(it.prompt.c_str(), "%d%c%d=", &a, &op, &b) != 3 || it.prompt.back() != '=') continue;
    ++checked;
    const int want = op == '+' ? a + b : op == '-' ? a - b : a * b;
    const size_t semi = it.answer.rfind(';');
    ASSERT_NE(semi, std::string::npos) << it.answer;
    EXPECT_EQ(it.answer.substr(semi + 1), std::to_string(want)) << it.prompt;
    std::vector<std::vector<int>> steps;  // each step's operands, then its stated value
    size_t start = 0;
    while (start < semi) {
      const size_t end = std::min(it.answer.find(',', start), semi);
      const std::string step = it.answer.substr(start, end - start);
      const size_t eq = step.find('=');
      ASSERT_NE(eq, std::string::npos) << step;
      std::vector<int> v;
      int value = 0, sign = 1;
      size_t p = 0;
      const bool times = step.find('*') != std::string::npos;
      int acc = times ? 1 : 0;
      while (p < eq) {  // single operator kind per step: +/- or one *
        size_t used = 0;
        const int x = std::stoi(step.substr(p, eq - p), &used);
        v.push_back(x);
        acc = times ? acc * x : acc + sign * x;
        p += used;
        if (p < eq) sign = step[p++] == '-' ? -1 : 1;
      }
      value = std::stoi(step.substr(eq + 1));
      EXPECT_EQ(acc, value) << step;
      v.push_back(value);
      steps.push_back(v);
      start = end + 1;
    }
    if (op == '*') {
      ASSERT_EQ(steps.size(), 1u) << it.answer;
      EXPECT_EQ(steps[0][0], a);
      EXPECT_EQ(steps[0][1], b);
      continue;
    }
    ASSERT_EQ(steps.size(), 2u) << it.answer;
    EXPECT_EQ(steps[0][0] % 10, a % 10) << it.answer;  // units (17-9: borrowed ten)
    EXPECT_EQ(steps[0][1], b % 10) << it.answer;
    EXPECT_EQ(steps[1][0], a / 10) << it.answer;  // tens, then the carry or borrow
    EXPECT_EQ(steps[1][1], b / 10) << it.answer;
    const bool carry = op == '+' ? a % 10 + b % 10 >= 10 : a % 10 < b % 10;
    EXPECT_EQ(steps[1].size(), carry ? 4u : 3u) << it.answer;
  }
  EXPECT_GT(checked, 50);
  // The fixed chat turns come cycled: every turn equally often, however many are asked for.
  auto turns = make_task_items("chat", Split::kTrain, 24, 1);
  ASSERT_TRUE(turns.ok());
  std::map<std::string, int> seen;
  for (const TaskItem& it : *turns) ++seen[it.prompt];
  EXPECT_EQ(seen.size(), 8u);
  for (const auto& [prompt, n] : seen) EXPECT_EQ(n, 3) << prompt;
  EXPECT_EQ(make_task_items("poetry", Split::kTrain, 1, 1).status().code(), Code::kInvalidArgument);
}

// The copying tasks (outside the default corpus): a rewrite's answer is its prompt's text with
// one name replaced; a record's answer is JSON of the prompt's eight fields, in order.
TEST(Corpus, CopyTasksAnswerFromThePrompt) {
  for (const std::string& t : copy_tasks()) {
    EXPECT_EQ(std::count(corpus_tasks().begin(), corpus_tasks().end(), t), 0) << t;
  }
  auto rw = make_task_items("rewrite", Split::kTest, 200, 3);
  ASSERT_TRUE(rw.ok());
  ASSERT_EQ(rw->size(), 200u);
  int zh = 0;
  for (const TaskItem& it : *rw) {
    std::string from, to, text;
    const std::string en_head = "replace ", zh_head = "把", zh_mid = "换成", zh_colon = "：";
    if (it.prompt.rfind(en_head, 0) == 0) {
      const size_t with = it.prompt.find(" with "), colon = it.prompt.find(": ");
      ASSERT_TRUE(with != std::string::npos && colon != std::string::npos) << it.prompt;
      from = it.prompt.substr(en_head.size(), with - en_head.size());
      to = it.prompt.substr(with + 6, colon - with - 6);
      text = it.prompt.substr(colon + 2);
    } else {
      ASSERT_EQ(it.prompt.rfind(zh_head, 0), 0u) << it.prompt;
      ++zh;
      const size_t mid = it.prompt.find(zh_mid), colon = it.prompt.find(zh_colon);
      from = it.prompt.substr(zh_head.size(), mid - zh_head.size());
      to = it.prompt.substr(mid + zh_mid.size(), colon - mid - zh_mid.size());
      text = it.prompt.substr(colon + zh_colon.size());
    }
    ASSERT_FALSE(from.empty() || to.empty() || from == to) << it.prompt;
    std::string want = text;
    for (size_t at = want.find(from); at != std::string::npos; at = want.find(from, at + to.size())) {
      want.replace(at, from.size(), to);
    }
    EXPECT_NE(want, text) << it.prompt;
    EXPECT_EQ(it.answer, want) << it.prompt;
  }
  EXPECT_GT(zh, 50);
  EXPECT_LT(zh, 150);
  auto rec = make_task_items("record", Split::kTest, 200, 3);
  ASSERT_TRUE(rec.ok());
  const std::vector<std::string> keys = {"name", "city", "day", "time", "item", "count", "place", "genre"};
  for (const TaskItem& it : *rec) {
    auto j = nlohmann::ordered_json::parse(it.answer, nullptr, false);
    ASSERT_TRUE(j.is_object()) << it.answer;
    EXPECT_EQ(j.dump(), it.answer);  // no whitespace anywhere
    std::vector<std::string> got;
    for (const auto& [k, v] : j.items()) {
      got.push_back(k);
      const std::string value = v.is_string() ? v.get<std::string>() : v.dump();
      EXPECT_NE(it.prompt.find(value), std::string::npos) << k << " in " << it.prompt;
    }
    EXPECT_EQ(got, keys) << it.answer;
    EXPECT_TRUE(j["count"].is_number_integer()) << it.answer;
  }
}

TEST(Vocab, LearnsMergesAndKeepsTheirParts) {
  std::string text;
  auto items = make_task_items("intent", Split::kTrain, 2000, 1);
  for (const TaskItem& it : *items) text += chat_example(it);
  auto v = learn_vocab(text, {.n_vocab = 1024});
  ASSERT_TRUE(v.ok());
  EXPECT_LE(v->tokens.size(), 1024u);
  EXPECT_EQ(v->tokens[static_cast<size_t>(v->im_end)], "<|im_end|>");
  std::set<std::string> all(v->tokens.begin(), v->tokens.end());
  EXPECT_EQ(all.size(), v->tokens.size());  // no duplicates
  EXPECT_TRUE(all.count("<0x0A>"));
  EXPECT_TRUE(all.count("天"));
  int merges = 0;
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    if (v->scores[i] < 0) ++merges;  // learned merges carry negative ranks as scores
  }
  EXPECT_GT(merges, 300);
  EXPECT_EQ(learn_vocab(text, {.n_vocab = 10}).status().code(), Code::kInvalidArgument);

  // Numbers stay one token per digit, however often "12" or "99=" occurs.
  std::string math;
  auto sums = make_task_items("math", Split::kTrain, 3000, 1);
  for (const TaskItem& it : *sums) math += chat_example(it);
  auto mv = learn_vocab(math, {.n_vocab = 1024});
  ASSERT_TRUE(mv.ok());
  int digit_tokens = 0;
  for (size_t i = 0; i < mv->tokens.size(); ++i) {
    const std::string& t = mv->tokens[i];
    if (mv->types[i] != 1 || t.find_first_of("0123456789") == std::string::npos) continue;
    ++digit_tokens;
    EXPECT_EQ(t.size(), 1u) << t;
  }
  EXPECT_EQ(digit_tokens, 10);
}

TEST(Train, ShortRunLowersLossAndTheModelRuns) {
  const std::string dir = testutil::scratch_dir("train_test");
  TrainOptions o;
  o.output = dir + "/mini.gguf";
  o.n_vocab = 768;
  o.n_embd = 64;
  o.n_layer = 2;
  o.n_head = 2;
  o.n_ff = 128;
  o.items_per_task = 150;
  o.epochs = 3;
  o.lr = 1e-2f;
  o.report_every = 5;
  auto r = train_model(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->epoch_train_loss.size(), 3u);
  ASSERT_GE(r->curve.size(), 4u);
  // Starts near ln(768) = 6.64 (the first report averages 5 steps) and falls well below it.
  EXPECT_GT(r->curve.front().loss, 5.5);
  EXPECT_LT(r->curve.back().loss, r->curve.front().loss - 1.0)
      << r->curve.front().loss << " -> " << r->curve.back().loss;
  EXPECT_LT(r->epoch_train_loss[2], r->epoch_train_loss[0]);

  // The result is an ordinary GGUF for the engine, with the chat template.
  auto m = Model::Load(o.output);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ((*m)->info().arch, "llama");
  EXPECT_TRUE((*m)->info().has_chat_template);
  auto toks = (*m)->Tokenize("意图：明天北京天气怎么样", false);
  ASSERT_TRUE(toks.ok());
  std::string back;
  for (int32_t t : *toks) back += (*m)->TokenBytes(t);
  EXPECT_EQ(back, "意图：明天北京天气怎么样");

  EvalOptions eo;
  eo.model = o.output;
  eo.reference = o.output;
  eo.items = 5;
  auto ev = evaluate_model(eo);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  ASSERT_EQ(ev->tasks.size(), 4u);
  EXPECT_GT(ev->perplexity, 1.0);
  EXPECT_LT(ev->perplexity, 768.0);  // better than uniform over the vocabulary
  EXPECT_NEAR(ev->kl_mean, 0.0, 1e-6);  // against itself
  EXPECT_DOUBLE_EQ(ev->top1_agree, 1.0);

  o.n_embd = 63;  // not divisible by the heads
  EXPECT_EQ(train_model(o).status().code(), Code::kInvalidArgument);
}

// The committed model reproduces from its command: the same options give the same bytes
// (corpus, vocabulary, initial weights, window order and loss masks all come from the seed).
TEST(Train, SameOptionsGiveTheSameFile) {
  const std::string dir = testutil::scratch_dir("train_repro");
  TrainOptions o;
  o.n_vocab = 600;
  o.n_embd = 32;
  o.n_layer = 1;
  o.n_head = 2;
  o.n_ff = 64;
  o.items_per_task = 60;
  o.epochs = 2;
  o.n_threads = 1;
  o.output = dir + "/a.gguf";
  ASSERT_TRUE(train_model(o).ok());
  o.output = dir + "/b.gguf";
  ASSERT_TRUE(train_model(o).ok());
  const std::string a = testutil::read_file(dir + "/a.gguf"), b = testutil::read_file(dir + "/b.gguf");
  ASSERT_GT(a.size(), 10000u);
  EXPECT_TRUE(a == b) << "two runs with the same options wrote different files";
  o.seed = 2;
  o.output = dir + "/c.gguf";
  ASSERT_TRUE(train_model(o).ok());
  EXPECT_FALSE(a == testutil::read_file(dir + "/c.gguf"));
}

// OpenBLAS (llama.cpp's BLAS backend, for matrix products and weight gradients) trains as
// ggml's CPU kernels do: other float rounding, the same losses to a few 1e-3 nats.
TEST(Train, BlasAndCpuKernelsTrainAlike) {
  const std::string dir = testutil::scratch_dir("train_blas");
  TrainOptions o;
  o.n_vocab = 600;
  o.n_embd = 64;  // every product at least 32 wide, so OpenBLAS takes them
  o.n_layer = 1;
  o.n_head = 2;
  o.n_ff = 128;
  o.items_per_task = 60;
  o.epochs = 2;
  o.n_threads = 1;
  o.use_blas = true;
  o.output = dir + "/blas.gguf";
  auto blas = train_model(o);
#if !defined(EDGELLM_TEST_TRAIN_BLAS)
  EXPECT_EQ(blas.status().code(), Code::kFailedPrecondition);  // built without: a clear error
  return;
#endif
  ASSERT_TRUE(blas.ok()) << blas.status().ToString();
  EXPECT_EQ(blas->gradient_backend, "OpenBLAS");
  // The llama_opt run is llama.cpp's own training loop, 30 epochs of it: the plain binary
  // compares with it; the ASan twin checks edgellm's graph above.
  if (testutil::kSanitized) return;
  o.use_llama_opt = true;  // --blas is for edgellm's own graph only: said, not ignored
  EXPECT_EQ(train_model(o).status().code(), Code::kInvalidArgument);
  o.use_llama_opt = false;
  o.use_blas = false;
  o.output = dir + "/cpu.gguf";
  auto cpu = train_model(o);
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  EXPECT_EQ(cpu->gradient_backend, "ggml CPU");
  ASSERT_EQ(blas->epoch_train_loss.size(), 2u);
  ASSERT_EQ(cpu->epoch_train_loss.size(), 2u);
  EXPECT_LT(blas->epoch_train_loss[1], blas->epoch_train_loss[0] - 0.03);  // it trains
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(blas->epoch_train_loss[e], cpu->epoch_train_loss[e], 0.01) << "epoch " << e;
    EXPECT_NEAR(blas->epoch_val_loss[e], cpu->epoch_val_loss[e], 0.01) << "epoch " << e;
  }
}

// edgellm's own graph trains every weight and computes what llama.cpp computes: the loss
// the training graph reports on a training window equals llama.cpp's inference loss on the
// saved GGUF; and the same run through llama_opt (whose attn_k/attn_v get no gradient) learns
// far less.
TEST(Train, DirectGraphMatchesLlamaCppAndBeatsLlamaOpt) {
  const std::string dir = testutil::scratch_dir("train_direct");
  TrainOptions o;
  o.output = dir + "/direct.gguf";
  o.n_vocab = 768;
  o.n_embd = 128;
  o.n_layer = 2;
  o.n_head = 4;
  o.n_ff = 256;
  o.items_per_task = 20;
  o.epochs = 30;
  o.lr = 3e-3f;
  o.n_threads = 1;
  o.prompt_loss_weight = 1;  // plain language modelling, as llama_opt does
  auto direct = train_model(o);
  ASSERT_TRUE(direct.ok()) << direct.status().ToString();
  ASSERT_EQ(direct->probe_tokens.size(), 257u);

  EvalOptions eo;
  eo.model = o.output;
  eo.tasks.clear();
  eo.tokens = direct->probe_tokens;
  auto ev = evaluate_model(eo);
  ASSERT_TRUE(ev.ok()) << ev.status().ToString();
  EXPECT_EQ(ev->n_tokens, 256);
  // llama.cpp keeps the KV cache in F16; the training graph is all F32.
  EXPECT_NEAR(std::log(ev->perplexity), direct->probe_loss, 0.05 + 0.05 * direct->probe_loss);

  // The llama_opt run is llama.cpp's own training loop, 30 epochs of it: the plain binary
  // compares with it; the ASan twin checks edgellm's graph above.
  if (testutil::kSanitized) return;
  o.use_llama_opt = true;
  o.output = dir + "/llama-opt.gguf";
  auto via_opt = train_model(o);
  ASSERT_TRUE(via_opt.ok()) << via_opt.status().ToString();
  EXPECT_LT(direct->epoch_train_loss.back() + 1.0, via_opt->epoch_train_loss.back())
      << "direct " << direct->epoch_train_loss.back() << " llama_opt "
      << via_opt->epoch_train_loss.back();
}

}  // namespace
}  // namespace edgellm
