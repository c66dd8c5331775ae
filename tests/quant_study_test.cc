// Quantization measured per task on edgellm's committed trained model: the importance matrix
// from the corpus, the study (sizes, KL, accuracy per variant), advise's pick, and the CLI's
// study file round trip.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "edgellm/edgellm.h"
#include "edgellm/quant_study.h"
#include "ggml.h"
#include "gguf.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

const std::string kModel = std::string(EDGELLM_TEST_SOURCE_DIR) + "/assets/edgellm-tiny-F32.gguf";

const TaskScore* score(const QuantVariant& v, const std::string& task) {
  for (const TaskScore& s : v.eval.tasks) {
    if (s.task == task) return &s;
  }
  return nullptr;
}

class QuantStudyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testutil::scratch_dir("quant_study_test");
    QuantStudyOptions o;
    o.model = kModel;
    o.work_dir = dir_;
    o.types = {"Q8_0", "Q4_K_M"};
    o.eval.tasks = {"intent", "code", "math"};
    o.eval.items = 25;
    o.decode_tokens = 16;
    auto s = run_quant_study(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    study_ = new QuantStudy(std::move(*s));
  }
  static void TearDownTestSuite() { delete study_; }
  static inline std::string dir_;
  static inline QuantStudy* study_ = nullptr;
};

TEST_F(QuantStudyTest, MeasuresEveryVariant) {
  ASSERT_NE(study_, nullptr);
  // The original, Q8_0 (an imatrix changes nothing there: skipped), Q4_K_M with and without.
  ASSERT_EQ(study_->variants.size(), 4u);
  const QuantVariant& f32 = study_->variants[0];
  const QuantVariant& q8 = study_->variants[1];
  const QuantVariant& q4 = study_->variants[2];
  const QuantVariant& q4i = study_->variants[3];
  EXPECT_EQ(f32.type, "F32");
  EXPECT_EQ(q8.type, "Q8_0");
  EXPECT_FALSE(q4.imatrix);
  EXPECT_TRUE(q4i.imatrix);
  EXPECT_GT(f32.file_bytes, q8.file_bytes * 3);
  EXPECT_GT(q8.file_bytes, q4.file_bytes);
  EXPECT_NEAR(f32.bits_per_weight, 32.0, 0.5);
  EXPECT_LT(q4.bits_per_weight, 6.0);
  for (const QuantVariant& v : study_->variants) {
    EXPECT_GT(v.decode_tps, 0) << v.type;
    EXPECT_GT(v.eval.perplexity, 1.0) << v.type;
    ASSERT_NE(score(v, "intent"), nullptr);
    ASSERT_NE(score(v, "code"), nullptr);
    EXPECT_EQ(score(v, "intent")->n, 25);
  }
  // The trained original is far above guessing on intents and on arithmetic.
  EXPECT_GT(score(f32, "intent")->accuracy, score(f32, "intent")->chance + 0.3);
  EXPECT_GT(score(f32, "math")->accuracy, score(f32, "math")->chance + 0.3);
  // KL from the original: none for itself, small for Q8_0, larger at 4 bits.
  EXPECT_LT(f32.eval.kl_mean, 0);
  EXPECT_GE(q8.eval.kl_mean, 0);
  EXPECT_LT(q8.eval.kl_mean, q4.eval.kl_mean);
  // The importance matrix changed the 4-bit weights (not byte-identical, so not the same KL).
  EXPECT_NE(q4.eval.kl_mean, q4i.eval.kl_mean);
}

TEST_F(QuantStudyTest, AdvisePicksTheSmallestWithinBudget) {
  ASSERT_NE(study_, nullptr);
  for (const double budget : {0.0, 0.02, 0.1, 1.0}) {
    for (const std::string task : {"intent", "code", "math"}) {
      auto a = advise_quantization(*study_, task, budget);
      ASSERT_TRUE(a.ok()) << a.status().ToString();
      const double ref = score(study_->variants[0], task)->accuracy;
      EXPECT_DOUBLE_EQ(a->reference_accuracy, ref);
      // Property: the pick is within budget, and nothing smaller is.
      for (size_t i = 1; i < study_->variants.size(); ++i) {
        const QuantVariant& v = study_->variants[i];
        const bool within = ref - score(v, task)->accuracy <= budget + 1e-9;
        if (!a->found) {
          EXPECT_FALSE(within) << v.type << " " << task << " " << budget;
        } else if (within) {
          EXPECT_GE(v.file_bytes, a->pick.file_bytes) << v.type << " " << task << " " << budget;
        }
      }
      if (a->found) {
        EXPECT_LE(ref - score(a->pick, task)->accuracy, budget + 1e-9);
      }
    }
  }
  // With the whole range as budget, the smallest variant of all.
  auto any = advise_quantization(*study_, "code", 1.0);
  ASSERT_TRUE(any.ok());
  EXPECT_TRUE(any->found);
  EXPECT_EQ(any->pick.type, "Q4_K_M");
  EXPECT_EQ(advise_quantization(*study_, "poetry", 0.02).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(advise_quantization(*study_, "code", 2.0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(advise_quantization(*study_, "code", -0.1).status().code(), Code::kInvalidArgument);
  // Where the original is no better than guessing, there is nothing to keep: advise says so
  // instead of picking the smallest file (a study whose original scored only the chance rate).
  QuantStudy guessing = *study_;
  for (TaskScore& t : guessing.variants[0].eval.tasks) {
    if (t.task == "math") t.accuracy = t.chance;
  }
  auto none = advise_quantization(guessing, "math", 0.02);
  EXPECT_EQ(none.status().code(), Code::kFailedPrecondition);
  EXPECT_NE(none.status().message().find("no better than always giving the most common answer"),
            std::string::npos) << none.status().message();
  EXPECT_TRUE(advise_quantization(*study_, "math", 0.02).ok());
}

TEST_F(QuantStudyTest, ImatrixHoldsEveryWeightsColumns) {
  const std::string path = dir_ + "/own.imatrix.gguf";
  ImatrixOptions o;
  o.model = kModel;
  o.output = path;
  o.items_per_task = 5;
  int32_t last = 0, total = 0;
  o.on_progress = [&](int32_t d, int32_t t) {
    last = d;
    total = t;
  };
  ASSERT_TRUE(compute_imatrix(o).ok());
  EXPECT_GT(total, 0);
  EXPECT_EQ(last, total);
  auto info = Model::Load(kModel, {.metadata_only = true});
  ASSERT_TRUE(info.ok());
  ggml_context* raw = nullptr;
  gguf_init_params p{false, &raw};
  gguf_context* g = gguf_init_from_file(path.c_str(), p);
  ASSERT_NE(g, nullptr);
  auto width = [&](const std::string& name) -> int64_t {
    ggml_tensor* t = ggml_get_tensor(raw, (name + ".in_sum2").c_str());
    if (!t) return -1;
    for (int64_t i = 0; i < ggml_nelements(t); ++i) {
      if (!(static_cast<float*>(t->data)[i] > 0)) return -2;  // every column saw activity
    }
    return ggml_nelements(t);
  };
  const int64_t embd = (*info)->info().n_embd;
  for (int l = 0; l < (*info)->info().n_layer; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    EXPECT_EQ(width(b + "attn_q.weight"), embd);
    EXPECT_EQ(width(b + "attn_k.weight"), embd);
    EXPECT_EQ(width(b + "attn_output.weight"), embd);
    EXPECT_EQ(width(b + "ffn_up.weight"), embd);
    EXPECT_GT(width(b + "ffn_down.weight"), embd);  // n_ff columns
  }
  EXPECT_EQ(width("token_embd.weight"), embd);  // the tied output projection
  gguf_free(g);
  ggml_free(raw);

  // quantize_model takes it; a missing one is refused before any work.
  QuantizeOptions q;
  q.input = kModel;
  q.output = dir_ + "/own-Q4_K_M.gguf";
  q.type = "Q4_K_M";
  q.imatrix_path = path;
  EXPECT_TRUE(quantize_model(q).ok());
  q.imatrix_path = dir_ + "/missing.imatrix.gguf";
  EXPECT_EQ(quantize_model(q).code(), Code::kNotFound);

  // The study refuses a quantized input.
  QuantStudyOptions so;
  so.model = dir_ + "/own-Q4_K_M.gguf";
  so.work_dir = dir_ + "/again";
  EXPECT_EQ(run_quant_study(so).status().code(), Code::kInvalidArgument);
  o.output = "/nonexistent-dir/x.imatrix.gguf";
  EXPECT_EQ(compute_imatrix(o).code(), Code::kNotFound);
}

using testutil::CliRun;
CliRun Cli(const std::string& args) { return testutil::run_cli(args); }

TEST(QuantStudyCli, StudyFileFeedsAdvise) {
  const std::string dir = testutil::scratch_dir("quant_study_cli");
  const std::string study = dir + "/study.json";
  CliRun s = Cli("quant-study " + kModel + " --work-dir " + dir + " --types Q4_0 --imatrix off" +
                 " --tasks intent --items 10 --tokens 8 --out " + study);
  ASSERT_EQ(s.rc, 0) << s.err;
  EXPECT_NE(s.out.find("Q4_0"), std::string::npos) << s.out;
  CliRun a = Cli("advise " + kModel + " --task intent --max-drop 100% --study " + study + " --json");
  ASSERT_EQ(a.rc, 0) << a.err;
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["pick"], "Q4_0");
  EXPECT_TRUE(j["found"].get<bool>());
  EXPECT_EQ(j["measured"].size(), 2u);
  // Bad input: a budget in the wrong form, a task the study lacks, a corrupt study file.
  EXPECT_EQ(Cli("advise " + kModel + " --task intent --max-drop lots --study " + study).rc, 1);
  CliRun missing = Cli("advise " + kModel + " --task math --study " + study);
  EXPECT_EQ(missing.rc, 1);
  EXPECT_NE(missing.err.find("did not score task 'math'"), std::string::npos) << missing.err;
  testutil::write_file(dir + "/bad.json", "{\"variants\": [{\"type\": 3}]}");
  CliRun bad = Cli("advise " + kModel + " --task intent --study " + dir + "/bad.json");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("run `edgellm quant-study --out` again"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace edgellm
