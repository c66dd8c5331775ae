// MemoryPlanner on a generated fixture: formula vs libllama dry run, verdicts, bad input.
#include "edgellm/planner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "edgellm/edgellm.h"
#include "testutil/fixtures.h"

namespace edgellm {
namespace {

class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override { path_ = testutil::synth_model("tiny", "Q8_0"); }
  Result<MemoryPlan> Plan(int32_t ctx, uint64_t ram, KvType kv = KvType::kF16) {
    PlanOptions o;
    o.n_ctx = ctx;
    o.ram_bytes = ram;
    o.kv_type = kv;
    return plan_memory(path_, o);
  }
  std::string path_;
};

TEST_F(PlannerTest, BreakdownMatchesShapes) {
  auto p = Plan(2048, 8ull << 30);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  // tiny: 2 layers, 2 KV heads of 64 dims, f16: 2 x 2 x 2048 x 2 x 64 x 2 bytes = 2 MiB.
  EXPECT_EQ(p->kv_bytes, 2u << 20);
  EXPECT_EQ(p->kv_bytes_llama, p->kv_bytes);  // our formula is what libllama allocates
  EXPECT_GT(p->compute_bytes, 0u);
  auto m = Model::Load(path_);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(p->weights_bytes, (*m)->info().weights_bytes);
  EXPECT_EQ(p->n_params, (*m)->info().n_params);
  EXPECT_EQ(p->formula_bits, 8);
  EXPECT_EQ(p->formula_bytes, static_cast<uint64_t>(p->n_params * 8 / 8.0 * 1.2));
  EXPECT_EQ(p->total_bytes, p->weights_bytes + p->kv_bytes + p->compute_bytes + p->overhead_bytes);
  EXPECT_EQ(p->budget_bytes, static_cast<uint64_t>((8ull << 30) * 0.4));
  EXPECT_TRUE(p->fits);
  EXPECT_EQ(p->max_ctx_that_fits, 32768);
  EXPECT_TRUE(p->advice.empty());
}

TEST_F(PlannerTest, ContextAndKvTypeScaleTheCache) {
  auto a = Plan(2048, 8ull << 30);
  auto b = Plan(4096, 8ull << 30);
  auto q = Plan(4096, 8ull << 30, KvType::kQ8_0);
  ASSERT_TRUE(a.ok() && b.ok() && q.ok());
  EXPECT_EQ(b->kv_bytes, 2 * a->kv_bytes);
  EXPECT_EQ(q->kv_bytes, b->kv_bytes * 34 / 64);
  EXPECT_EQ(q->kv_bytes_llama, q->kv_bytes);
}

TEST_F(PlannerTest, TightBudgetGivesLargestContextAndAdvice) {
  auto roomy = Plan(32768, 8ull << 30);
  ASSERT_TRUE(roomy.ok());
  // A budget just above what 8192 tokens need: 32768 cannot fit, 8192 must.
  auto at8k = Plan(8192, 8ull << 30);
  ASSERT_TRUE(at8k.ok());
  const uint64_t ram = static_cast<uint64_t>((at8k->total_bytes + (1 << 20)) / 0.4);
  auto tight = Plan(32768, ram);
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->fits);
  EXPECT_GE(tight->max_ctx_that_fits, 8192);
  EXPECT_LT(tight->max_ctx_that_fits, 32768);
  EXPECT_NE(tight->advice.find("--ctx " + std::to_string(tight->max_ctx_that_fits)),
            std::string::npos)
      << tight->advice;
  auto hopeless = Plan(2048, 16ull << 20);
  ASSERT_TRUE(hopeless.ok());
  EXPECT_FALSE(hopeless->fits);
  EXPECT_EQ(hopeless->max_ctx_that_fits, 0);
  EXPECT_NE(hopeless->advice.find("smaller model"), std::string::npos) << hopeless->advice;
}

TEST_F(PlannerTest, BadInput) {
  EXPECT_EQ(plan_memory("/no/such.gguf").status().code(), Code::kNotFound);
  EXPECT_EQ(Plan(1 << 30, 8ull << 30).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(Plan(0, 8ull << 30).status().code(), Code::kInvalidArgument);
  PlanOptions o;
  o.budget_fraction = 0;
  EXPECT_EQ(plan_memory(path_, o).status().code(), Code::kInvalidArgument);
  EXPECT_FALSE(kv_type_from_name("fp8").ok());
  EXPECT_EQ(nominal_bits("Q4_K_M"), 4);
  EXPECT_EQ(nominal_bits("F16"), 16);
}

TEST(TaskTest, QuantizationFollowsTheTask) {
  for (Task t : {Task::kChat, Task::kSummarize, Task::kIntent, Task::kCode, Task::kMath}) {
    auto back = task_from_name(task_name(t));
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, t);
    EXPECT_FALSE(quant_for_task(t).reason.empty());
  }
  EXPECT_EQ(quant_for_task(Task::kCode).quant, "Q8_0");
  EXPECT_EQ(quant_for_task(Task::kMath).quant, "Q8_0");
  EXPECT_EQ(quant_for_task(Task::kChat).quant, "Q4_K_M");
  EXPECT_EQ(quant_for_task(Task::kSummarize).quant, "Q4_K_M");
  EXPECT_EQ(quant_for_task(Task::kIntent).quant, "Q4_K_M");
  auto upper = task_from_name("CODE");
  ASSERT_TRUE(upper.ok());
  EXPECT_EQ(*upper, Task::kCode);
  EXPECT_EQ(task_from_name("poetry").status().code(), Code::kInvalidArgument);
}

TEST(TiersTest, TableFollowsSizesQuantsAndTiers) {
  TierOptions o;
  o.vocab_path = testutil::vocab_path();
  o.scratch_dir = testutil::scratch_dir("tiers");
  auto rows = plan_tiers(o);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  // 5 presets (Qwen2.5 0.5B-7B, DeepSeek-R1-Distill-Qwen-1.5B) x 2 quants from exact shapes,
  // 3 sizes x 2 quants by the formula.
  ASSERT_EQ(rows->size(), 16u);
  std::map<std::string, const TierRow*> by;
  for (const auto& r : *rows) {
    by[r.model + "/" + r.quant] = &r;
    ASSERT_EQ(r.fits_exact.size(), 3u);
    ASSERT_EQ(r.fits_formula.size(), 3u);
    EXPECT_GT(r.formula_bytes, 0u);
    // A larger device never turns a fit into a miss.
    for (size_t i = 1; i < 3; ++i) {
      EXPECT_GE(r.fits_exact[i], r.fits_exact[i - 1]) << r.model;
      EXPECT_GE(r.fits_formula[i], r.fits_formula[i - 1]) << r.model;
    }
  }
  const char* presets[] = {"qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b", "qwen2.5-7b"};
  for (int i = 0; i < 4; ++i) {
    const TierRow* q4 = by.at(std::string(presets[i]) + "/Q4_K_M");
    const TierRow* q8 = by.at(std::string(presets[i]) + "/Q8_0");
    EXPECT_GT(q4->exact_bytes, 0u);
    EXPECT_GT(q8->exact_bytes, q4->exact_bytes) << presets[i];
    if (i > 0) {
      EXPECT_GT(q4->exact_bytes, by.at(std::string(presets[i - 1]) + "/Q4_K_M")->exact_bytes);
    }
  }
  EXPECT_EQ(by.at("8B/Q4_K_M")->exact_bytes, 0u);  // no preset: formula only
  // The seed's conclusion: small models fit every tier, 7B at 8 bits none (40% budget).
  EXPECT_TRUE(by.at("qwen2.5-0.5b/Q4_K_M")->fits_exact[0]);
  EXPECT_FALSE(by.at("qwen2.5-7b/Q8_0")->fits_exact[2]);
  EXPECT_TRUE(std::filesystem::is_empty(o.scratch_dir)) << "header-only files left behind";

  TierOptions bad = o;
  bad.ram_gib = {0};
  EXPECT_EQ(plan_tiers(bad).status().code(), Code::kInvalidArgument);
  bad = o;
  bad.quants = {"Q9_Z"};
  EXPECT_EQ(plan_tiers(bad).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace edgellm
